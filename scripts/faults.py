#!/usr/bin/env python3
"""The fault-injection run (scripts/faults.sh calls it with the built binaries): a private Redis (AOF),
the five services and the reference receiver, a simulated campaign, and while it plays out: SIGKILL of
each service in turn (restarted at once), SIGKILL and restart of Redis from its AOF, the receiver down
for a scaled day, and slow responses (within and beyond the dispatcher's timeout). Once every window
and delay has passed and the pipeline is idle, `attribution ledger` accounts for every event ingest
acknowledged and every postback that fell due; the run fails on anything unaccounted or duplicated, and on
any stream entry that, read back as JSON, breaks its message schema (docs/reference/messages/).

With --cluster the pipeline runs on a local Redis Cluster (3 primaries, 3 replicas) and the faults are
the cluster's own: SIGKILL of a primary while the campaign flows (its replica is promoted; the killed
node is replaced by a new empty node on its port that replicates the promoted one, see
RedisCluster.replace), and resharding that moves the slots of several partitions between
primaries. Besides the ledger, no stage may dead-letter anything and no service may log CROSSSLOT.
With --cluster --node-partitions the cluster's nodes run apart (a loopback address each) and the faults
are partitions between them (scripts/node_partitions.py): a primary cut off from every other node past
cluster-node-timeout (its replica promoted, the old one rejoining as a replica and discarding what it
took meanwhile, measured), and a primary cut off from its replica only (not failed over); the probes
below run too. Needs root (iptables).

With --network Redis and each service run on test hosts of their own (network namespaces joined by
a bridge, scripts/netns.py) and the faults are the network's: a stage worker, ingest, the scheduler
and the dispatcher each cut off from Redis for longer than the 5 s command timeout while work flows
(ingest while requests arrive), 1, 10 and 50 ms added to every service's round trip to Redis with 1 %
of the packets dropped (a relay in front of Redis, `attribution relay`), and a worker stalled
(SIGSTOP) longer than CLAIM_IDLE_MS, so that another replica claims its pending entries. Probes
(scripts/probes.py) read every service's /ready four times a second and post a value update to
ingest eight times a second, each request in a thread of its own; the report lists, per fault, how long the service it hit was not ready, how slowly /ready
answered, and what the event route answered. Needs root.

With --tls Redis is TLS only and demands client certificates (a CA and certificates made for the run);
the services, the tools and the run's own redis-cli reach it over TLS, through its kill and its restart
from the append-only file, or with --cluster through the failover and the resharding (the nodes speak
TLS to each other too).

  faults.py BIN OUT [--devices N] [--time-scale S] [--cluster [--node-partitions] | --network] [--tls]
"""

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import message_schemas
import netns
import node_partitions
from harness import (
    Pipeline,
    Processes,
    RedisCluster,
    b64url_decode,
    free_port,
    http,
    partitioned,
    redis_cli,
    run_redis_cli,
    slot_ranges,
    start_redis,
    use_binaries,
    wait_http,
    wait_redis,
)
from probes import EventProbe, ReadinessProbe

parser = argparse.ArgumentParser()
parser.add_argument("bin")
parser.add_argument("out")
parser.add_argument("--devices", type=int, default=600)
parser.add_argument("--time-scale", type=float, default=28800, help="a day lasts 86400/S seconds")
parser.add_argument("--cluster", action="store_true", help="run on a local Redis Cluster, with failover and resharding")
parser.add_argument(
    "--batch", type=int, default=1, help="devices per batch request (the …/batch routes); 1: one event per request"
)
parser.add_argument(
    "--network", action="store_true", help="each service and Redis on its own test host; network faults"
)
parser.add_argument(
    "--node-partitions",
    action="store_true",
    help="with --cluster: partitions between the cluster's nodes instead of kills and resharding",
)
parser.add_argument("--tls", action="store_true", help="Redis (or the cluster) TLS only, with client certificates")
args = parser.parse_args()
if args.tls and (args.network or args.node_partitions):
    parser.error(
        "--tls runs the kills and restarts, on one Redis or a cluster: not with --network or --node-partitions"
    )
if args.network and args.cluster:
    parser.error("--network runs on one Redis: give --network or --cluster, not both")
if args.node_partitions and not args.cluster:
    parser.error("--node-partitions partitions a cluster's nodes: give --cluster too")

BIN, OUT, SCALE = args.bin, os.path.abspath(args.out), args.time_scale
use_binaries(BIN)
DAY = 86400 / SCALE  # seconds of a scaled day
os.makedirs(os.path.join(OUT, "redis"), exist_ok=True)
processes = Processes(OUT)
faults = []  # (seconds since start, what)
started = time.time()


def note(what):
    faults.append((round(time.time() - started, 1), what))
    print(f"  [{faults[-1][0]:6.1f} s] {what}", flush=True)


def tool(*argv, **kwargs):
    return subprocess.run([os.path.join(BIN, "attribution"), *map(str, argv)], capture_output=True, text=True, **kwargs)


def redis_tool(*argv):
    """An `attribution` subcommand that reads the pipeline's Redis."""
    return tool(*argv, "--redis-url", REDIS_URL, *(["--cluster"] if args.cluster else []))


REDIS_PORT = free_port()
# On test hosts (--network) Redis and each service have their own address; else all on loopback.
REDIS_HOST = netns.address("redis") if args.network else "127.0.0.1"
REDIS_URL = f"{'rediss' if args.tls else 'redis'}://{REDIS_HOST}:{REDIS_PORT}/0"
# On test hosts the services reach Redis through a relay on Redis's host that adds the latency faults' delay.
RELAY_PORT = free_port()
LATENCY_FILE = os.path.join(OUT, "latency-ms")
cluster = None
store = None  # one Redis (harness.LaunchedRedis), when not on a cluster


# admin runs on ingest's test host: the two are the HTTP API.
SHARED_HOSTS = {"admin": "ingest"}


def host_of(name):
    return netns.address(SHARED_HOSTS.get(name, name)) if args.network else "127.0.0.1"


def on_host(name):
    """The argv prefix that runs `name` on its test host (nothing on loopback)."""
    return netns.exec_prefix(SHARED_HOSTS.get(name, name)) if args.network else []


def placement(name):
    """Where service `name` runs (harness.Pipeline): on its test host and its address, else on loopback."""
    return on_host(name), {"HTTP_HOST": host_of(name)}


def start_relay():
    """On test hosts, the relay on Redis's host that the services reach Redis through."""
    processes.start(
        "latency-relay",
        on_host("redis")
        + [
            os.path.join(BIN, "attribution"),
            "relay",
            "--listen",
            f"{REDIS_HOST}:{RELAY_PORT}",
            "--upstream",
            f"{REDIS_HOST}:{REDIS_PORT}",
            "--delay-file",
            LATENCY_FILE,
        ],
    )
    wait_redis(RELAY_PORT, host=REDIS_HOST)


class ByteTap:
    """A TCP relay between the dispatcher and the receiver that keeps every byte the dispatcher sends
    (request lines, headers, bodies), so the privacy check reads what actually left the pipeline.
    While the receiver is down, a connection is closed at once: the dispatcher sees a failed POST."""

    def __init__(self, upstream_port, path, host="127.0.0.1"):
        self.upstream_port, self.out, self.lock = upstream_port, open(path, "ab"), threading.Lock()
        self.host = host
        self.server = socket.create_server((host, 0))
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            client, _ = self.server.accept()
            threading.Thread(target=self.relay, args=(client,), daemon=True).start()

    def relay(self, client):
        try:
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5)
        except OSError:
            client.close()
            return
        upstream.settimeout(None)
        threading.Thread(target=self.pump, args=(upstream, client, False), daemon=True).start()
        self.pump(client, upstream, True)

    def pump(self, source, target, keep):
        try:
            while data := source.recv(65536):
                if keep:
                    with self.lock:
                        self.out.write(data)
                        self.out.flush()
                target.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, target):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


def devices_in(path, acks):
    """Acknowledged device identifiers that occur anywhere in the bytes at `path`, or inside the
    base64url header and payload of any JWS there (an AdAttributionKit postback's signed fields)."""
    devices = {json.loads(line)["device"] for line in open(acks)}
    data = open(path, "rb").read()
    for header, payload in re.findall(rb"([A-Za-z0-9_-]{8,})\.([A-Za-z0-9_-]{8,})\.[A-Za-z0-9_-]{8,}", data):
        for segment in (header, payload):
            data += b" " + b64url_decode(segment)
    tokens = set(re.findall(rb"[A-Za-z0-9_.-]+", data))
    return sorted(device for device in devices if device.encode() in tokens)


def main():
    global cluster, store, REDIS_URL
    if args.cluster:
        cluster = RedisCluster(processes, OUT, apart=args.node_partitions, tls=args.tls)
        REDIS_URL = cluster.url
        note(f"cluster of {len(cluster.primaries())} primaries and their replicas on ports {cluster.ports}")
    else:
        # AOF with the default fsync every second: a killed redis-server (not a crashed machine) loses
        # nothing it acknowledged, since the AOF is written before replies go out.
        # On its test host Redis answers the other hosts of the private bridge (protected mode would
        # refuse any address but loopback without a password).
        reachable = ["--protected-mode", "no"] if args.network else []
        redis_dir = os.path.join(OUT, "redis")
        store = start_redis(
            processes, REDIS_PORT, redis_dir, host=REDIS_HOST, prefix=on_host("redis"), options=reachable, tls=args.tls
        )
        if args.network:
            start_relay()
    token = os.urandom(24).hex()
    pipeline = Pipeline(
        processes,
        BIN,
        f"redis://{REDIS_HOST}:{RELAY_PORT}/0" if args.network else REDIS_URL,
        os.path.join(OUT, "keys"),
        token,
        placement,
        TIME_SCALE=str(SCALE),
        LOG_LEVEL="info",
        CLAIM_IDLE_MS="2000",
        CONVERSION_SETTLE_MS="250",
        WINDOW_CLOSE_GRACE_MS="400",
        POSTBACK_URL_ALLOWLIST=f"127.0.0.1,{netns.HOST_ADDRESS}" if args.network else "127.0.0.1",
        CROWD_TIER_THRESHOLDS="1,5,20",
        DELIVERY_TIMEOUT_MS="1000",
        # The services' own retention: their trimming runs through the faults too.
        STREAM_RETENTION_HOURS=None,
        **({"REDIS_CLUSTER": "true"} if args.cluster else {}),
    )
    # Every service's HTTP port, for the readiness probe (ingest's /ready is on its operations listener).
    ports = {"admin": free_port(), "ingest": free_port()}
    ingest, admin = pipeline.start_http(ports["ingest"], ports["admin"])
    for name in ("verifier", "attribution-winner", "scheduler", "dispatcher"):
        ports[name] = free_port()
        pipeline.start(name, {"HTTP_PORT": str(ports[name])})
    if args.network:
        # A second scheduler replica on the scheduler's host: the one the stall stops has its pending
        # entries claimed by this one.
        ports["scheduler-b"] = free_port()
        pipeline.start("scheduler", {"HTTP_PORT": str(ports["scheduler-b"])}, process="scheduler-b")
    pipeline.wait_signing_keys()

    receiver_port = free_port()
    receiver = f"http://127.0.0.1:{receiver_port}"
    received = os.path.join(OUT, "postbacks.jsonl")
    pipeline.start_receiver(receiver_port, received)
    sent_bytes = os.path.join(OUT, "dispatcher-bytes.bin")
    tap = ByteTap(receiver_port, sent_bytes, netns.HOST_ADDRESS if args.network else "127.0.0.1")
    ready = {name: f"http://{pipeline.host(name.removesuffix('-b'))}:{port}/ready" for name, port in ports.items()}
    ready["ingest"] = f"{pipeline.operations}/ready"
    probed = args.network or args.node_partitions
    probe = ReadinessProbe(ready, started) if probed else None

    acks = os.path.join(OUT, "acknowledged.jsonl")
    probe_acks = os.path.join(OUT, "probe-acknowledged.jsonl")
    events = EventProbe(ingest, probe_app_key(admin, token), PROBE_APP, probe_acks, started) if probed else None
    timeline = (
        NODE_PARTITION_TIMELINE
        if args.node_partitions
        else CLUSTER_TIMELINE
        if args.cluster
        else network_timeline()
        if args.network
        else TIMELINE
    )
    print(
        f"==> campaign: {args.devices} devices, a day lasts {DAY:g} s; {len(timeline)} faults over 40 scaled days",
        flush=True,
    )
    campaign = subprocess.Popen(
        [
            os.path.join(BIN, "attribution"),
            "simulate",
            "--ingest-url",
            ingest,
            "--admin-url",
            admin,
            "--admin-token",
            token,
            "--receiver-url",
            f"http://{tap.host}:{tap.port}/postbacks",
            "--devices",
            str(args.devices),
            "--time-scale",
            str(SCALE),
            "--seed",
            "11",
            "--retry-seconds",
            "120",
            "--batch",
            str(args.batch),
            "--acknowledgements",
            acks,
            "--report",
            os.path.join(OUT, "simulation.json"),
        ],
        stdout=open(os.path.join(OUT, "simulate.log"), "w"),
        stderr=subprocess.STDOUT,
    )
    while not (os.path.exists(acks) and os.path.getsize(acks) > 0):
        if campaign.poll() is not None:
            raise SystemExit("the campaign stopped before its first event; see simulate.log")
        time.sleep(0.05)

    duplicates = inject(receiver, timeline)
    if campaign.wait() != 0:
        raise SystemExit("the campaign failed; see simulate.log")
    if events:
        # A fault can end with the campaign: the event route's answers after its heal count toward its row.
        time.sleep(ACCEPTING_AGAIN_BOUND_S + 1)
        events.stop()
    print("==> campaign done; waiting for every window, delay and retry to pass", flush=True)
    wait_idle(timeout=(35 + 6 + 9) * DAY + 120)
    duplicates += receiver_stats(receiver).get("duplicates", 0)
    dead = processes.dead()
    dispatcher = {}
    for name in partitioned("dispatcher:stats"):
        flat = (
            redis_cli(REDIS_PORT, "HGETALL", name, host=REDIS_HOST).split("\n")
            if not cluster
            else run_redis_cli(["-c", "-p", cluster.ports[0], "HGETALL", name], capture_output=True, text=True)
            .stdout.strip()
            .split("\n")
        )
        for i in range(0, len(flat) - 1, 2):
            dispatcher[flat[i]] = dispatcher.get(flat[i], 0) + int(flat[i + 1])

    if events:
        # The campaign's acknowledgements and the event probe's, for one ledger.
        merged = os.path.join(OUT, "acknowledged-all.jsonl")
        with open(merged, "w") as out:
            for path in (acks, probe_acks):
                out.write(open(path).read() if os.path.exists(path) else "")
        acks = merged
    print("==> ledger", flush=True)
    ledger = redis_tool("ledger", "--acknowledgements", acks, "--received", received, "--time-scale", SCALE, "--json")
    # The same verdict in words: both runs must pass (nothing may change between them).
    in_words = redis_tool("ledger", "--acknowledgements", acks, "--received", received, "--time-scale", SCALE)
    text = in_words.stdout
    print(text)
    print(f"    dispatcher: {dispatcher}; redeliveries deduplicated by the receiver: {duplicates}")
    if not ledger.stdout.strip():
        raise SystemExit("attribution ledger failed: " + ledger.stderr)
    leaked = devices_in(sent_bytes, acks)
    print(
        f"    {os.path.getsize(sent_bytes):,} bytes sent by the dispatcher; device identifiers in them: {len(leaked)}"
    )
    # Every entry of every stream, read back as JSON, against the published message schemas.
    messages, message_problems = message_schemas.validate_streams(REDIS_URL, *(["--cluster"] if args.cluster else []))
    print(f"    {messages:,} stream entries against their message schemas: {len(message_problems)} problems")
    stage_dead, crossslot = {}, []
    if cluster or args.network:
        # No stage may dead-letter anything through failover, resharding or network faults (a worker
        # cut off from Redis lives through it), and no command may be refused for spanning slots
        # (the transport refuses such a command itself, before sending).
        snapshot = json.loads(redis_tool("status", "--json").stdout or "{}")
        stage_dead = {
            s["name"]: s["length"]
            for s in snapshot.get("deadLetters", [])
            if s["length"] and s["name"] != "deliveries:dead"
        }
    if cluster:
        for name in ("ingest", "verifier", "attribution-winner", "scheduler", "dispatcher"):
            with open(os.path.join(OUT, name + ".log"), errors="replace") as log:
                crossslot += [
                    f"{name}: {line.strip()[:200]}" for line in log if "CROSSSLOT" in line or "crossSlot" in line
                ]
    if cluster or args.network:
        print(f"    stage dead letters: {stage_dead or 'none'}; CROSSSLOT in service logs: {len(crossslot)}")
    report = {
        "devices": args.devices,
        "dispatcher-bytes": os.path.getsize(sent_bytes),
        "devices-in-dispatcher-bytes": leaked,
        "time-scale": SCALE,
        "faults": faults,
        "redeliveries-deduplicated": duplicates,
        "dispatcher": dispatcher,
        "exited-on-their-own": dead,
        "seconds": round(time.time() - started),
        "ledger": json.loads(ledger.stdout),
        "cluster": bool(cluster),
        "stage-dead-letters": stage_dead,
        "crossslot": crossslot[:20],
        "network-faults": network_summary(probe, events),
        "node-partitions": node_partition_records,
        "message-schema-problems": message_problems[:20],
    }
    # Checked before the report is written, which then lists them.
    discarded = ledger.returncode != 0 and sent_from_discarded_writes(report, received)
    write_report(report, text)
    if dead:
        print(f"FAILED: processes exited on their own: {dead}", file=sys.stderr)
    if leaked:
        print(f"FAILED: device identifiers in what the dispatcher sent: {leaked[:5]}", file=sys.stderr)
    if stage_dead or crossslot:
        print(f"FAILED: stage dead letters {stage_dead}, CROSSSLOT lines {crossslot[:3]}", file=sys.stderr)
    for problem in message_problems[:10]:
        print(f"FAILED: a stream message breaks its schema: {problem}", file=sys.stderr)
    route = event_route_failures(report["network-faults"])
    for failure in route:
        print(f"FAILED: ingest's event route: {failure}", file=sys.stderr)
    ledger_ok = ledger.returncode == in_words.returncode == 0 or discarded
    clean = not dead and not leaked and not stage_dead and not crossslot and not route and not message_problems
    return 0 if ledger_ok and clean else 1


def sent_from_discarded_writes(report, received):
    """Whether the ledger's only violation is postbacks delivered that never fell due, each received while
    a primary was cut off from the majority: sent from writes that primary took and then discarded.

    Under a time scale a conversion, its attribution and its postback's 1-2 s delay all fit within the
    minority window; when the redo after the failover attributes the conversion otherwise (an impression
    among the discarded writes comes back later, with its client's retry), the postback sent meanwhile has
    no due counterpart. At real time the 24 h minimum delay is far longer than any minority window.
    The run reports them (README: Partitions between Redis nodes) rather than fail on them."""
    ledger = report["ledger"]
    identifiers = ledger["postbacks"].get("delivered-not-due-identifiers", [])
    if not identifiers or len(ledger["violations"]) != 1 or "never fell due" not in ledger["violations"][0]:
        return False
    windows = [
        (row["started-s"], row["ended-s"])
        for row in report.get("network-faults") or []
        if row["fault"] == "isolate-primary" and row["ended-s"] is not None
    ]
    received_at = {}
    with open(received) as lines:
        for line in lines:
            row = json.loads(line)
            identifier = (row.get("payload") or {}).get("postback-identifier")
            if identifier and "received-at" in row:
                received_at.setdefault(identifier, row["received-at"] / 1000 - started)
    outside = [i for i in identifiers if not any(a <= received_at.get(i, -1) <= b + 1 for a, b in windows)]
    if outside:
        print(
            f"FAILED: postbacks delivered that never fell due, outside any minority window: {outside[:5]}",
            file=sys.stderr,
        )
        return False
    print(
        f"    sent from discarded writes: {len(identifiers)} postbacks delivered while a primary was cut off from the "
        "majority, from state the failover then discarded (their conversions were attributed otherwise on the redo); "
        "the ledger's only violation, accepted in this run",
        flush=True,
    )
    report["sent-from-discarded-writes"] = identifiers
    return True


# When each fault strikes, in scaled days after the campaign's first event: installs happen in the first
# day or so, second updates at day 4; window 0 closes at day 2 and its postbacks go out on days 3–5,
# window 1's (day 7) on days 8–13, window 2's (day 35) on days 36–41.
TIMELINE = [
    (0.3, "kill", "ingest"),
    (0.8, "kill", "verifier"),
    (1.3, "kill", "attribution-winner"),
    (2.0, "kill", "scheduler"),
    (3.5, "receiver-down", None),
    (4.0, "kill", "ingest"),
    (4.2, "kill", "verifier"),
    (4.4, "kill", "attribution-winner"),
    (4.6, "slow", 300),
    (5.0, "kill", "dispatcher"),
    (5.5, "slow", 0),
    (6.0, "kill", "redis"),
    (7.2, "kill", "scheduler"),
    (8.5, "slow", 1500),
    (10.5, "slow", 0),
    (11.0, "kill", "dispatcher"),
    (12.0, "receiver-down", None),
    (20.0, "kill", "redis"),
    (35.2, "kill", "scheduler"),
    (37.0, "receiver-down", None),
    (38.5, "slow", 1500),
    (39.0, "kill", "dispatcher"),
    (39.5, "slow", 0),
    (40.0, "kill", "redis"),
]


# On a cluster: a primary killed during the installs and again while first-window postbacks go out
# (each time its replica is promoted and the killed node returns as a replica), and slots of several
# partitions moved between primaries during the updates and again during the later windows.
CLUSTER_TIMELINE = [
    (0.4, "failover", None),
    (1.2, "rejoin", None),
    (2.5, "reshard", None),
    (3.5, "failover", None),
    (4.5, "rejoin", None),
    (5.0, "kill", "scheduler"),
    (8.0, "reshard", None),
    (36.0, "failover", None),
    (37.0, "rejoin", None),
]


# With --node-partitions, the cluster's nodes cut off from each other (scripts/node_partitions.py): a
# primary from every other node during the installs, past cluster-node-timeout (1 s), so its replica is
# promoted and it rejoins as a replica; a primary from its replica only during the updates; a primary
# from the majority again as window 2's postbacks go out.
NODE_PARTITION_TIMELINE = [(0.5, "isolate-primary", 5), (10.0, "cut-replica", 4), (36.0, "isolate-primary", 5)]
node_partition_records = []


def node_partition(action, seconds):
    begun = time.time() - started
    fault = node_partitions.isolate_primary if action == "isolate-primary" else node_partitions.cut_replica
    node_partition_records.append(fault(cluster, seconds, note))
    network_faults.append((action, f":{node_partition_records[-1]['primary']}", begun, time.time() - started))


def partition_slots():
    """Every partition's hash slot (the slot of its tag)."""
    return [int(redis_cli(cluster.ports[0], "CLUSTER", "KEYSLOT", name)) for name in partitioned("x")]


def reshard():
    """Moves the lowest slots of the primary serving the most partitions, enough to carry two of its
    partitions, to the primary serving the fewest, with `redis-cli --cluster reshard`."""
    nodes = {port: slots for port, role, _, slots in cluster.nodes() if role == "master" and slots}

    def owned(slots_text):
        return sorted(slot for low, high in slot_ranges(slots_text.split()) for slot in range(low, high + 1))

    by_node = {port: owned(text) for port, text in nodes.items()}
    partitions = partition_slots()
    counts = {port: sum(1 for s in partitions if s in set(slots)) for port, slots in by_node.items()}
    source = max(counts, key=counts.get)
    target = min(counts, key=counts.get)
    theirs = [by_node[source].index(s) for s in partitions if s in set(by_node[source])]
    count = sorted(theirs)[min(1, len(theirs) - 1)] + 1
    note(f"resharding: {count} slots ({min(2, len(theirs))} partitions among them) from :{source} to :{target}")
    cluster.reshard(count, source, target)
    note("resharding done")


# On test hosts (--network), in scaled days after the campaign's first event, each fault with its real
# length in seconds (the Redis command timeout is 5 s, CLAIM_IDLE_MS 2 s), one after another so that
# what each made unavailable is its own: ingest cut off while the installs arrive, the verifier while
# the value updates do (day 4), the dispatcher while window 1's postbacks go out (days 8–13), a stall
# of one scheduler replica past the claim time, attribution-winner cut off, 1 % packet loss on every
# service's link to Redis as window 2 closes (day 35), and the scheduler cut off while window 2's
# postbacks are prepared (days 36–41).
NETWORK_TIMELINE = [
    (0.2, "partition", "ingest", 3),
    (3.8, "partition", "verifier", 6),
    (10.5, "partition", "dispatcher", 6),
    (17.0, "stall", "scheduler", 5),
    (23.0, "partition", "attribution-winner", 6),
    (30.0, "latency", 1, 3),
    (33.5, "latency", 10, 3),
    (37.0, "latency", 50, 3),
    (40.5, "partition", "scheduler", 6),
]
LOSS = 0.01  # the share of packets dropped while latency is added
# What ingest's event routes must do while ingest is cut off from Redis: answer 503 within the Redis
# command timeout (5 s; the README's Errors section), with a margin for the probe's own scheduling, and
# accept again soon after the link heals.
EVENT_ANSWER_BOUND_S = 6.5
# ...and once ingest has noticed the cut (see EventProbe.NOTICED_AFTER_S), refuse at once: no Redis
# round trip is made for a refused request.
PROMPT_REFUSAL_BOUND_S = 1.0
ACCEPTING_AGAIN_BOUND_S = 5.0
PROBE_APP = "1999000111"  # an App Store item identifier no campaign uses


def probe_app_key(admin, token):
    """Registers the event probe's app (its updates wait for conversions that never come) and returns a key."""
    http("PUT", f"{admin}/v1/admin/advertised-apps/{PROBE_APP}", {}, token=token)
    return http("POST", f"{admin}/v1/admin/advertised-apps/{PROBE_APP}/keys", {}, token=token)["app-key"]


def network_summary(probe, events):
    """Per network fault: the readiness probe's row plus what the event route answered meanwhile."""
    if not probe:
        return []
    rows = probe.summary(network_faults)
    for row in rows:
        row["event-route"] = events.summary(
            row["started-s"], row["ended-s"] if row["ended-s"] is not None else row["started-s"]
        )
    return rows


def event_route_failures(rows):
    """What the event route did wrong: while ingest was cut off, a refusal other than 503, a slow answer, no
    503 seen or no 202 soon after; while Redis nodes were cut off from each other, any answer but 202 or 503."""
    failures = []
    for row in rows:
        ingest_cut = row["fault"] == "partition" and row["target"] == "ingest"
        if not ingest_cut and row["fault"] not in ("isolate-primary", "cut-replica"):
            continue
        route = row["event-route"]
        wrong = [answer for answer in route["answers"] if not answer.startswith(("202", "503"))]
        if wrong:
            failures.append(f"answers other than 202 or 503 during {row['fault']} {row['target']}: {wrong}")
        if not ingest_cut:
            continue
        if route["slowest-answer-s"] > EVENT_ANSWER_BOUND_S:
            failures.append(f"an event request took {route['slowest-answer-s']} s (bound {EVENT_ANSWER_BOUND_S} s)")
        if route["slowest-once-noticed-s"] > PROMPT_REFUSAL_BOUND_S:
            failures.append(
                f"a request sent once ingest had noticed the cut took {route['slowest-once-noticed-s']} s "
                f"(bound {PROMPT_REFUSAL_BOUND_S} s)"
            )
        if route["accepting-again-after-s"] is None or route["accepting-again-after-s"] > ACCEPTING_AGAIN_BOUND_S:
            failures.append(
                f"no 202 within {ACCEPTING_AGAIN_BOUND_S} s of the link healing: {route['accepting-again-after-s']}"
            )
        if not any(answer.startswith("503") for answer in route["answers"]):
            failures.append("no 503 while ingest was cut off: the probe did not see the partition")
    return failures


network_faults = []  # (name, target, started, ended) in seconds since the run's start


def network_timeline():
    """NETWORK_TIMELINE as start and end events, in time order."""
    events = []
    for day, action, target, seconds in NETWORK_TIMELINE:
        events += [(day, action, (target, seconds)), (day + seconds / DAY, "end-" + action, (target, seconds))]
    return sorted(events, key=lambda event: event[0])


def set_latency(milliseconds):
    """What the relay in front of Redis adds to every round trip from now on (it rereads the file)."""
    with open(LATENCY_FILE, "w") as f:
        f.write(str(milliseconds))


def network_fault(action, target, seconds):
    """Starts or ends one network fault (see NETWORK_TIMELINE)."""
    services = ["ingest", "verifier", "attribution-winner", "scheduler", "dispatcher"]
    if action == "partition":
        netns.partition(target)
        note(f"{target} cut off from Redis for {seconds} s")
    elif action == "end-partition":
        netns.heal(target)
        note(f"{target} reaches Redis again")
    elif action == "latency":
        set_latency(target)
        for name in services:
            netns.lose(name, LOSS)
        note(
            f"{target} ms added to every service's round trip to Redis, {LOSS:.0%} of the packets dropped, for {seconds} s"
        )
    elif action == "end-latency":
        set_latency(0)
        for name in services:
            netns.stop_losing(name, LOSS)
        note("no added latency, no packet loss")
    elif action == "stall":
        processes.running[target].send_signal(signal.SIGSTOP)
        note(f"{target} stalled (SIGSTOP) for {seconds} s")
    elif action == "end-stall":
        processes.running[target].send_signal(signal.SIGCONT)
        note(f"{target} resumed (SIGCONT)")
    if action.startswith("end-"):
        name = action[4:]
        for index, (kind, hit, begun, ended) in enumerate(network_faults):
            if kind == name and hit == target and ended is None:
                network_faults[index] = (kind, hit, begun, time.time() - started)
    else:
        network_faults.append((action, target, time.time() - started, None))


def inject(receiver, timeline):
    """Plays `timeline`. Returns the duplicates the receiver counted before each of its restarts."""
    duplicates, origin, killed, failed_over_at = 0, time.time(), [], 0.0
    for day, action, target in timeline:
        time.sleep(max(0, origin + day * DAY - time.time()))
        if action in ("partition", "end-partition", "latency", "end-latency", "stall", "end-stall"):
            network_fault(action, *target)
        elif action in ("isolate-primary", "cut-replica"):
            node_partition(action, target)
        elif action == "failover":
            started_at = time.time()
            killed.append(cluster.kill_primary())
            failed_over_at = time.time()
            note(f"SIGKILL of primary :{killed[-1]}; a replica took over in {failed_over_at - started_at:.1f} s")
        elif action == "rejoin":
            # A slow failover can make the rejoin overdue: still 2 s after the election, so that the new
            # configEpoch has spread.
            time.sleep(max(0, failed_over_at + 2 - time.time()))
            cluster.replace(killed[-1])
            note(f"node :{killed[-1]} replaced by a new empty node (rejoins as a replica)")
        elif action == "reshard":
            reshard()
        elif action == "kill" and target == "redis":
            store.kill()
            note("SIGKILL redis-server")
            time.sleep(0.3)
            store.restart()
            note("redis-server restarted from its AOF")
        elif action == "kill":
            processes.kill(target)
            note(f"SIGKILL {target}")
            time.sleep(0.2)
            processes.restart(target)
        elif action == "receiver-down":
            duplicates += receiver_stats(receiver).get("duplicates", 0)
            processes.kill("receiver")
            note(f"receiver down for a scaled day ({DAY:g} s)")
            time.sleep(DAY)
            processes.restart("receiver")
            wait_http(receiver + "/health")
            note("receiver back")
        else:
            http("POST", receiver + "/control", {"delay-ms": target})
            note(
                {
                    0: "receiver answers at once again",
                    300: "receiver answers 300 ms late (within the dispatcher's 1 s timeout)",
                    1500: "receiver answers 1.5 s late (beyond the 1 s timeout: retried, then deduplicated)",
                }[target]
            )
    return duplicates


def receiver_stats(receiver):
    try:
        return http("GET", receiver + "/stats")
    except Exception:
        return {}


def wait_idle(timeout):
    """Until nothing is pending, unread or delayed anywhere (three readings in a row), or the timeout."""
    deadline, quiet = time.time() + timeout, 0
    while time.time() < deadline:
        status = redis_tool("status", "--json")
        try:
            snapshot = json.loads(status.stdout)
            busy = sum(g["pending"] + (g.get("lag") or 0) for g in snapshot["groups"]) + sum(
                q["count"] for q in snapshot["queues"]
            )
        except (ValueError, KeyError):
            busy = -1
        quiet = quiet + 1 if busy == 0 else 0
        if quiet == 3:
            return
        time.sleep(1)
    print("the pipeline did not become idle in time; the ledger will show what is in flight", flush=True)


def write_report(report, text):
    with open(os.path.join(OUT, "report.json"), "w") as f:
        json.dump(report, f, indent=2)
    lines = [
        "# Fault-injection run",
        "",
        f"{report['devices']} devices, time scale {SCALE:g} (a day lasts {DAY:g} s), "
        f"{len(report['faults'])} fault events, {report['seconds']} s.",
        "",
        "## Faults injected",
        "",
    ]
    lines += [f"- {at} s: {what}" for at, what in report["faults"]]
    d = report["dispatcher"]
    lines += [
        "",
        f"Bytes the dispatcher sent (request lines, headers, bodies, through a relay): {report['dispatcher-bytes']:,}; "
        f"device identifiers found in them: {len(report['devices-in-dispatcher-bytes'])}.",
    ]
    lines += [
        "",
        f"The dispatcher counted {d.get('delivered', 0)} deliveries, {d.get('failed-attempts', 0)} failed attempts "
        f"(retried), {d.get('deferred', 0)} deliveries held back by an open circuit or a full queue (no attempt spent) "
        f"and {d.get('dead-lettered', 0)} dead letters; the receiver deduplicated "
        f"{report['redeliveries-deduplicated']} redeliveries.",
        "",
        "## Ledger",
        "",
        "```",
        text.strip(),
        "```",
        "",
    ]
    if report.get("node-partitions"):
        lines += [
            "## Partitions between Redis nodes: what replication lost",
            "",
            "Discarded: the bytes of the old primary's replication stream past the point its replica was promoted "
            "from (writes it took while cut off, thrown away when it rejoined as a replica); the ledger above shows "
            "what that cost the pipeline.",
            "",
            "| fault | primary | replica | seconds | replica promoted after (s) | discarded (bytes) |",
            "|---|---|---|---|---|---|",
        ]
        for record in report["node-partitions"]:
            lines.append(
                f"| {record['fault']} | :{record['primary']} | :{record['replica']} | {record['seconds']} | "
                f"{record.get('promoted-after-s', 'not failed over')} | {record.get('discarded-replication-bytes', 0)} |"
            )
        lines.append("")
        sent = report.get("sent-from-discarded-writes") or []
        lines += [
            f"Postbacks sent from the discarded writes (received while a primary was cut off; their conversions "
            f"were attributed otherwise on the redo, so they never fell due): {len(sent)}"
            + (f", e.g. {', '.join(sent[:3])}." if sent else "."),
            "",
        ]
    if report.get("network-faults"):
        lines += [
            "## Network faults: what each made unavailable",
            "",
            "Not ready: seconds the service(s) a fault hit answered /ready otherwise than 200 within 1 s, from the "
            "fault's start to 5 s after its end or the next fault's start; slowest: the longest /ready answer meanwhile. "
            "Event route: what ingest answered the probe's value updates (one every 125 ms, each in its own thread) "
            "over the same span, the slowest answer, the slowest to a request sent from 0.5 s into the fault to its "
            "end, and how long after the fault's end the first 202 came.",
            "",
            "| fault | hit | from (s) | to (s) | not ready | slowest /ready (s) | event route answers | slowest (s) | slowest once noticed (s) | 202 again after (s) |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for row in report["network-faults"]:
            not_ready = ", ".join(f"{name} {seconds:g} s" for name, seconds in row["not-ready-s"].items()) or "none"
            route = row["event-route"]
            answers = ", ".join(f"{answer} ×{count}" for answer, count in sorted(route["answers"].items()))
            target = f"{row['target']} ms" if row["fault"] == "latency" else row["target"]
            lines.append(
                f"| {row['fault']} | {target} | {row['started-s']} | {row['ended-s']} | {not_ready} | "
                f"{row['slowest-ready-answer-s']} | {answers} | {route['slowest-answer-s']} | "
                f"{route['slowest-once-noticed-s']} | {route['accepting-again-after-s']} |"
            )
        lines.append("")
    with open(os.path.join(OUT, "report.md"), "w") as f:
        f.write("\n".join(lines))
    if report.get("network-faults"):
        # The table in the output too, where CI shows it.
        print("\n".join(line for line in lines if line.startswith("|")), flush=True)


if __name__ == "__main__":
    if args.network:
        netns.setup()
    try:
        code = main()
    finally:
        for kind, target, _, ended in network_faults:
            if kind == "stall" and ended is None:
                processes.running[target].send_signal(signal.SIGCONT)
        processes.stop_all()  # the cluster's launcher among them, which heals every cut as it stops
        if args.network:
            netns.teardown()
    sys.exit(code)
