"""Test hosts on one machine for the network fault run (scripts/faults.py --network): Redis and each
service in a network namespace of its own, each joined by a veth pair to one bridge in the host's
namespace (10.77.0.1, where the campaign, the receiver and the tools run). Faults act on one host's
links: a partition drops everything between a host and Redis (iptables in that host's namespace, both
directions), packet loss drops a share of them at random (iptables' `statistic` match). This kernel has
no `netem` qdisc (CONFIG_NET_SCH_NETEM is not set), so latency is added by a relay in front of Redis
instead (`attribution relay`).

Needs root and iproute2/iptables; every namespace, link and rule is removed by `teardown`, also after a
failed run (and any left by an interrupted one is removed by `setup` first)."""

import subprocess
import time

BRIDGE = "apbr0"
PREFIX = "10.77.0"
HOST_ADDRESS = f"{PREFIX}.1"
HOSTS = ["redis", "ingest", "verifier", "attribution-winner", "scheduler", "dispatcher"]


def address(host):
    """The test host's address on the bridge (Redis .2, the services after it)."""
    return f"{PREFIX}.{HOSTS.index(host) + 2}"


def namespace(host):
    return f"ap-{host}"


def run(*argv, check=True):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, check=check)


def in_namespace(host, *argv, check=True):
    return run("ip", "netns", "exec", namespace(host), *argv, check=check)


def exec_prefix(host):
    """The argv prefix that runs a command on `host` (`ip netns exec` execs it: the PID is the command's)."""
    return ["ip", "netns", "exec", namespace(host)]


def setup():
    teardown()
    run("ip", "link", "add", BRIDGE, "type", "bridge")
    run("ip", "addr", "add", f"{HOST_ADDRESS}/24", "dev", BRIDGE)
    run("ip", "link", "set", BRIDGE, "up")
    # Docker's FORWARD policy (DROP) would drop bridged frames where br_netfilter is loaded.
    run("iptables", "-I", "FORWARD", "-i", BRIDGE, "-o", BRIDGE, "-j", "ACCEPT")
    for index, host in enumerate(HOSTS):
        outside, inside = f"apv{index}h", f"apv{index}n"
        run("ip", "netns", "add", namespace(host))
        run("ip", "link", "add", outside, "type", "veth", "peer", "name", inside)
        run("ip", "link", "set", outside, "master", BRIDGE)
        run("ip", "link", "set", outside, "up")
        run("ip", "link", "set", inside, "netns", namespace(host))
        in_namespace(host, "ip", "addr", "add", f"{address(host)}/24", "dev", inside)
        in_namespace(host, "ip", "link", "set", inside, "up")
        in_namespace(host, "ip", "link", "set", "lo", "up")


def teardown():
    # The kernel frees a deleted namespace (and the veth ends in it) asynchronously, and a name whose
    # namespace is still busy may outlive `ip netns del`: delete the host ends first (that removes each
    # pair at once), retry the names, and wait until both are gone so that `setup` can reuse them.
    for index in range(len(HOSTS)):
        run("ip", "link", "del", f"apv{index}h", check=False)
    run("ip", "link", "del", BRIDGE, check=False)
    deadline = time.time() + 15
    while time.time() < deadline:
        names = run("ip", "netns", "list").stdout
        left = [host for host in HOSTS if namespace(host) in names.split()]
        for host in left:
            run("ip", "netns", "del", namespace(host), check=False)
        if not left and "apv" not in run("ip", "link").stdout:
            break
        time.sleep(0.2)
    while run("iptables", "-D", "FORWARD", "-i", BRIDGE, "-o", BRIDGE, "-j", "ACCEPT", check=False).returncode == 0:
        pass


def _redis_rules(probability=None):
    """iptables rule bodies (after the chain) for a host's traffic with Redis, both directions."""
    drop = ["-m", "statistic", "--mode", "random", "--probability", str(probability)] if probability else []
    return [
        ("OUTPUT", ["-d", address("redis"), *drop, "-j", "DROP"]),
        ("INPUT", ["-s", address("redis"), *drop, "-j", "DROP"]),
    ]


def partition(host):
    """Cuts `host` off from Redis (a service host; for Redis itself, from every service)."""
    for chain, rule in _redis_rules():
        in_namespace(host, "iptables", "-A", chain, *rule)


def heal(host):
    for chain, rule in _redis_rules():
        in_namespace(host, "iptables", "-D", chain, *rule, check=False)


def lose(host, share):
    """Drops `share` (0–1) of the packets between `host` and Redis, each way."""
    for chain, rule in _redis_rules(share):
        in_namespace(host, "iptables", "-A", chain, *rule)


def stop_losing(host, share):
    for chain, rule in _redis_rules(share):
        in_namespace(host, "iptables", "-D", chain, *rule, check=False)
