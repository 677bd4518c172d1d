#!/usr/bin/env python3
"""The main job (scripts/demo.sh calls it with the built binaries): a local Redis with ACLs on (or a
local Redis Cluster), the five services each as its own Redis user, the reference receiver, a simulated
campaign, and per window and ad network the postbacks that arrived against those the simulation
expects. Exits non-zero when they differ or a process it started exited on its own. Stops everything it
started, also when interrupted.

  demo.py BIN OUT [--devices N] [--time-scale S] [--cluster] [--tls]

With --tls Redis is TLS only and demands client certificates (mutual TLS): a CA and the server's and a
client's certificates made for the run in OUT/redis/tls (OUT/cluster/tls on a cluster, whose nodes
speak TLS to each other too); every service and tool reaches it with a rediss:// URL and
REDIS_TLS_CA_FILE, REDIS_TLS_CERT_FILE and REDIS_TLS_KEY_FILE.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time

import message_schemas
from harness import Pipeline, Processes, RedisCluster, free_port, http, redis_login, start_redis, until, use_binaries


def scale(text):
    """A time scale as given (the services read it as text), once it is a positive number."""
    if float(text) <= 0:
        raise ValueError(text)
    return text


def parse_arguments(argv=None):
    parser = argparse.ArgumentParser(description="The main job: the pipeline, a simulated campaign, a summary.")
    parser.add_argument("bin", help="the directory of the built executables")
    parser.add_argument("out", help="where logs, keys, Redis's files and the received postbacks go")
    parser.add_argument("--devices", type=int, default=60)
    parser.add_argument("--time-scale", type=scale, default="86400", help="a day lasts 86400/S seconds")
    parser.add_argument("--cluster", action="store_true", help="on a local Redis Cluster (3 primaries, 3 replicas)")
    parser.add_argument("--tls", action="store_true", help="Redis TLS only, with client certificates (mutual TLS)")
    return parser.parse_args(argv)


def start_store(processes, args, acl):
    """Redis with ACLs on, as compose runs it (this script connects as `operator`); its first node's port."""
    redis_login("operator", os.path.join(acl, "operator.password"))
    users = ["--aclfile", os.path.join(acl, "users.acl")]
    if args.cluster:
        # Replicas authenticate to their primaries as the `replication` user.
        cluster = RedisCluster(
            processes, args.out, options=[*users, "--include", os.path.join(acl, "replication.conf")], tls=args.tls
        )
        nodes = " ".join(f"127.0.0.1:{port}" for port in cluster.ports)
        over = ", TLS only, mutual, between the nodes too" if args.tls else ""
        print(f"==> Redis Cluster: 3 primaries and 3 replicas on {nodes}{over}", flush=True)
        return cluster.ports[0]
    port, directory = free_port(), os.path.join(args.out, "redis")
    os.makedirs(directory, exist_ok=True)
    over = f"TLS only, mutual (CA and certificates in {directory}/tls)" if args.tls else "plaintext"
    print(f"==> redis-server on 127.0.0.1:{port}, {over} (AOF in {directory})", flush=True)
    start_redis(processes, port, directory, host="127.0.0.1", options=users, tls=args.tls)
    return port


def expected_postbacks(report):
    """How many postbacks the simulation's report (`attribution simulate --report`) expects in all."""
    with open(report) as file:
        expected = json.load(file)
    return sum(expected["expected-winning"]) + expected["expected-non-winning"]


def wait_for_postbacks(receiver, due, deadline, settle=2.0):
    """Polls the receiver until `due` postbacks arrived (then `settle` seconds more, so that one too many
    is seen) or `deadline` seconds passed; the seconds it waited."""
    start = time.monotonic()

    def arrived():
        stats = http("GET", f"{receiver}/stats")
        return stats["accepted"] + stats["rejected"] >= due

    if until(arrived, seconds=deadline, every=0.5):
        time.sleep(settle)
    return time.monotonic() - start


def run(args, processes):
    tool = os.path.join(args.bin, "attribution")
    acl = os.path.join(args.out, "redis-acl")
    subprocess.run([tool, "redis-acl", "--out", acl], check=True, capture_output=True)
    port = start_store(processes, args, acl)
    scheme = "rediss" if args.tls else "redis"

    def own_user(name):
        """Each service connects as its own Redis user, with only its rights."""
        url = f"{scheme}://{name}@127.0.0.1:{port}/0"
        return (), {"REDIS_URL": url, "REDIS_PASSWORD_FILE": os.path.join(acl, f"{name}.password")}

    token = os.urandom(24).hex()
    pipeline = Pipeline(
        processes,
        args.bin,
        f"{scheme}://127.0.0.1:{port}/0",
        os.path.join(args.out, "keys"),
        token,
        own_user,
        TIME_SCALE=args.time_scale,
        LOG_LEVEL=os.environ.get("LOG_LEVEL", "info"),
        CLAIM_IDLE_MS="2000",
        # A day lasts a second by default: conversions settle 250 ms (6 scaled hours) instead of 2 s.
        CONVERSION_SETTLE_MS=os.environ.get("CONVERSION_SETTLE_MS", "250"),
        WINDOW_CLOSE_GRACE_MS=os.environ.get("WINDOW_CLOSE_GRACE_MS", "400"),
        # Demo crowds are small: low tier thresholds so that postbacks show values (defaults: 10,100,1000).
        CROWD_TIER_THRESHOLDS=os.environ.get("CROWD_TIER_THRESHOLDS", "1,5,20"),
        # The services' own retention, as deployed.
        STREAM_RETENTION_HOURS=None,
        **({"REDIS_CLUSTER": "true"} if args.cluster else {}),
    )
    print(f"==> services (time scale {args.time_scale}), each as its own Redis user", flush=True)
    ingest, admin = pipeline.start_http()
    for name in ("verifier", "attribution-winner", "scheduler", "dispatcher"):
        pipeline.start(name)
    pipeline.wait_signing_keys()

    receiver_port = free_port()
    receiver = f"http://127.0.0.1:{receiver_port}"
    postbacks = os.path.join(args.out, "postbacks.jsonl")
    print(f"==> reference receiver on 127.0.0.1:{receiver_port}", flush=True)
    pipeline.start_receiver(receiver_port, postbacks)

    print(f"==> simulating a campaign of {args.devices} devices", flush=True)
    expected = os.path.join(args.out, "simulation.json")
    simulate = [tool, "simulate", "--ingest-url", ingest, "--admin-url", admin, "--admin-token", token]
    simulate += ["--receiver-url", f"{receiver}/postbacks", "--devices", str(args.devices)]
    simulate += ["--time-scale", args.time_scale, "--seed", "7", "--retry-seconds", "60", "--report", expected]
    if subprocess.run(simulate).returncode != 0:
        print("FAILED: the simulated campaign did not complete", file=sys.stderr)
        return 1

    # The last window ends 35 days after the install and its postback may wait 6 more days; retries can
    # add a few. Wait at most that long in scaled time, then a margin; stop waiting once every postback
    # the simulation expects has arrived, and a moment more for any it does not expect.
    deadline = int(max((35 + 6 + 2) * 86400 / float(args.time_scale), 5) + 5)
    due = expected_postbacks(expected)
    print(f"==> waiting up to {deadline}s for the {due} expected postbacks (every window and delay)", flush=True)
    waited = wait_for_postbacks(receiver, due, deadline)
    print(f"    {waited:.0f}s", flush=True)

    print("==> postbacks the receiver verified and accepted", flush=True)
    print(json.dumps(http("GET", f"{receiver}/stats")), flush=True)
    # Per window, what the simulation expects against what arrived: a later window sends a postback only
    # for a winner whose app reported a value in it (spec section 4), so most installs get one postback.
    print("==> postbacks per window: arrived against expected", flush=True)
    matched = subprocess.run([tool, "summary", "--file", postbacks, "--expected", expected]).returncode == 0
    # Every message the campaign left on every stream, read back as JSON, against its published schema.
    login = ["--redis-password-file", os.path.join(acl, "operator.password"), *(["--cluster"] if args.cluster else [])]
    read, problems = message_schemas.validate_streams(f"{scheme}://operator@127.0.0.1:{port}/0", *login)
    print(f"==> {read} stream messages against their schemas (docs/reference/messages/): {len(problems)} problems")
    for problem in problems[:10]:
        print(f"    {problem}", flush=True)
    dead = processes.dead()
    print(f"    logs, keys and received postbacks: {args.out}", flush=True)
    if dead:
        print(f"FAILED: exited on their own (see their logs): {', '.join(dead)}", file=sys.stderr)
    if not matched:
        print("FAILED: the postbacks that arrived differ from what the simulation expects", file=sys.stderr)
    return 0 if matched and not dead and not problems else 1


def main():
    args = parse_arguments()
    args.out = os.path.abspath(args.out)
    use_binaries(args.bin)
    os.makedirs(os.path.join(args.out, "logs"), exist_ok=True)
    processes = Processes(os.path.join(args.out, "logs"))
    # A TERM (like Ctrl-C's INT) ends the run through the `finally` below, which stops what it started.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    try:
        return run(args, processes)
    except KeyboardInterrupt:
        print("\n==> interrupted", file=sys.stderr)
        return 128 + signal.SIGINT
    finally:
        # Not cut short by a second Ctrl-C: every process it started is stopped.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        processes.stop_all()


if __name__ == "__main__":
    sys.exit(main())
