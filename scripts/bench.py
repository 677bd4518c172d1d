#!/usr/bin/env python3
"""The benchmark run (scripts/bench.sh calls it with the release binaries): the machine's own limits
(openssl speed, redis-benchmark), then each stage alone on a preloaded stream, memory per held
postback, and resident memory per service, all in one run on a private Redis. Writes report.md,
report.json and chart.svg into the run directory.

Hold-and-fire is compared with RQ and arq (scripts/bench_peers.py). Then ingest → verifier →
attribution-winner finds its capacity itself (scripts/bench_ramp.py: offered rate stepped up, then
bisected, to the highest rate with ≥ 99 % accepted, accepted p99 ≤ 50 ms and no growing backlog), with
single-event requests and with batches of BENCH_BATCH (100); ingest latency at half the single-event
capacity; offers of 2× and 5× each capacity (goodput, shed, nothing accepted lost). The last phase
restarts the five services with a day lasting a second and searches their capacity for a campaign
(impression, install, value update per device) in batches, so that every service works; then the
first-window postbacks of the accepted installs arrive at a receiver that records them unchecked
(`--signatures later`), and every recorded signature is verified after the ramp (`verify_recorded`).
CPU per event per process and Redis commands per event come from the step at capacity.

Environment: BENCH_IMPRESSIONS, BENCH_POSTBACKS, BENCH_HELD, BENCH_HOLD_AND_FIRE (sizes);
BENCH_BATCH (100), BENCH_OVERLOAD_SECONDS (4), BENCH_LATENCY_SECONDS (10), BENCH_LATENCY_RATE (default
half the capacity); BENCH_FIVE_WARMUP_SECONDS (5, the all-five ramp's warm-up per step);
BENCH_MAX_EVENTS_LAG (ingest's lag ceiling, 20000); BENCH_STAGE_SCHEDULING (the four
stages' CPU priority: idle, the default, for SCHED_IDLE; "nice 10"; none); BENCH_RAMP_* (scripts/bench_ramp.py: step seconds, factor, bisections, start)."""

import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter

from bench_ramp import FACTOR as RAMP_FACTOR
from bench_ramp import START as RAMP_START
from bench_ramp import Bench, ramp_chart
from harness import (
    SCALED_DAY,
    Pipeline,
    Processes,
    RedisConnection,
    b64url_decode,
    cpu_seconds,
    free_port,
    http,
    partitioned,
    redis_cli,
    redis_info_cpu_seconds,
    rss_mib,
    start_redis,
    until,
    use_binaries,
)
from harness import (
    group_done as harness_group_done,
)
from pins import requirements

N = int(os.environ.get("BENCH_IMPRESSIONS", "20000"))
POSTBACKS = int(os.environ.get("BENCH_POSTBACKS", "10000"))
HELD = int(os.environ.get("BENCH_HELD", "1000000"))
BATCH = int(os.environ.get("BENCH_BATCH", "100"))  # events per request in the batch ramps
OVERLOAD_SECONDS = float(os.environ.get("BENCH_OVERLOAD_SECONDS", "4"))  # each offer at 2× and 5× capacity
# The all-five ramp's warm-up per step: a scaled day is a second, so an install's first window closes
# 2.4 s after it (2 days and WINDOW_CLOSE_GRACE_MS) and its postback is due 1–2 s later.
FIVE_WARMUP_SECONDS = float(os.environ.get("BENCH_FIVE_WARMUP_SECONDS", "5"))


# The four stages run as SCHED_IDLE (BENCH_STAGE_SCHEDULING "idle"; "nice N" or "none" otherwise),
# ingest, Redis and the load tool as usual: on one 2-core machine a backlogged verifier would otherwise
# take the CPU that ingest's requests wait for. `nice 10` did not keep it off: on this kernel's
# scheduler (EEVDF) a woken ingest thread still waited behind a nice-10 verifier, and at 10,000
# single-event impressions a second (about capacity) the accepted p99 was 52–69 ms with nice 10 and
# 6.7 ms with SCHED_IDLE, the same load.
def stage_scheduling(setting):
    if setting in ("idle", "none"):
        return ["chrt", "--idle", "0"] if setting == "idle" else []
    match = re.fullmatch(r"nice (-?\d+)", setting)
    if not match:
        sys.exit(f'BENCH_STAGE_SCHEDULING must be idle, none or "nice N", not {setting!r}')
    return ["nice", "-n", match.group(1)]


def openssl_rates(speed):
    """Signs and verifies per second from `openssl speed ecdsap256`'s output."""
    match = re.search(r"256 bits ecdsa \(nistp256\)\s+\S+\s+\S+\s+([\d.]+)\s+([\d.]+)", speed)
    return {"sign_per_s": float(match.group(1)), "verify_per_s": float(match.group(2))}


def requests_per_second(output):
    """The last "N requests per second" of redis-benchmark's quiet output."""
    return float(re.findall(r"([\d.]+) requests per second", output)[-1])


REDIS_PORT = None  # the run's Redis (measure sets it)


def redis(*args):
    return redis_cli(REDIS_PORT, *args)


def rewrite_aof():
    """Has Redis rewrite its append-only file now, and waits until it has: the next automatic rewrite
    then waits for the file to double. The sections before the all-five ramp keep every stream entry (a
    gigabyte or more by the overload offers), and a rewrite of that takes a core for about 15 s,
    whatever offer or step it falls on: one fell on the ramp's first two steps in one run, one on the
    5× batch offer in another, one on the latency measurement in a third. A 4 s offer measures ingest's
    shedding and the latency step ingest's queueing, not that stall; the all-five ramp measures the
    rewrites its own writes cause."""
    redis("BGREWRITEAOF")  # an error if one is already running: waiting for that one does as well
    until(
        lambda: re.search(
            r"aof_rewrite_in_progress:0\b.*aof_rewrite_scheduled:0\b", redis("INFO", "persistence"), re.S
        ),
        300,
    )


def loopback_floor(requests=200_000, connections=128):
    """What any refusal costs at least on this machine: a request and its answer over loopback TCP, one
    in flight on each of 128 connections (as `attribution-bench load` sends them), answered by a server that
    does next to nothing (Redis's PING), counting the CPU of both ends. A refused HTTP request makes the
    same system calls and wake-ups, and parses more."""
    server_before, client_before = (
        redis_info_cpu_seconds(redis("INFO", "cpu")),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    output = subprocess.run(
        [
            "redis-benchmark",
            "-p",
            str(REDIS_PORT),
            "-q",
            "-n",
            str(requests),
            "-c",
            str(connections),
            "-t",
            "ping_inline",
        ],
        capture_output=True,
        text=True,
    ).stdout
    server, client_after = (
        redis_info_cpu_seconds(redis("INFO", "cpu")) - server_before,
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    client = (client_after.ru_utime - client_before.ru_utime) + (client_after.ru_stime - client_before.ru_stime)
    return {
        "requests": requests,
        "connections": connections,
        "server_cpu_s": server,
        "client_cpu_s": client,
        "us_per_request": (server + client) * 1e6 / requests,
        "per_s": requests_per_second(output),
    }


def goodput_ceiling(ramp, multiple, floor_us, cores=None):
    """The most a path could accept at `multiple` × its capacity, as a share of the capacity, with every
    core of the machine working and each refused request costing no more than the loopback floor:
    accepted × (CPU per accepted event at capacity, every process, Redis and the load tool) + refused
    requests × floor ≤ cores. An upper bound for any ingest, since the load tool shares the cores.
    `floor_us`: the loopback floor's µs per request; `cores`: the machine's (os.cpu_count())."""
    at, capacity = ramp["at_capacity"], ramp["capacity_per_s"]
    if not at or not capacity:
        return None
    per_event = (
        sum(at["cpu_us_per_event"].values())
        + at["redis_us_per_event"]
        + at["figures"].get("sendingCPUSeconds", 0) * 1e6 / max(1, at["accepted"])
    )
    refusal = floor_us / ramp["batch"]  # per refused event
    accepted = ((cores or os.cpu_count()) * 1e6 - multiple * capacity * refusal) / max(1e-9, per_event - refusal)
    return max(0.0, accepted / capacity)


def xlen(stream):
    """XLEN summed over the stream's partitions."""
    return sum(int(redis("XLEN", name) or 0) for name in partitioned(stream))


def group_done(stream, group):
    """Every partition of `stream` read and acknowledged by `group` (harness.group_done, on a connection
    of the benchmark's own, opened at first use)."""
    global OBSERVER
    if OBSERVER is None:
        OBSERVER = RedisConnection(REDIS_PORT)
    return harness_group_done(OBSERVER, stream, group)


OBSERVER = None


def verify_recorded(path, jwks_url):
    """Every line a `--signatures later` receiver wrote, verified here after the ramp with Python's
    `cryptography` (OpenSSL): the JWS (ES256) against the published key its header's kid names, and
    the recorded payload is the signed one. Returns (lines, valid)."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

    keys = {}
    for jwk in json.loads(urllib.request.urlopen(jwks_url).read())["keys"]:
        x, y = (int.from_bytes(b64url_decode(jwk[c]), "big") for c in ("x", "y"))
        keys[jwk["kid"]] = ec.EllipticCurvePublicNumbers(x, y, ec.SECP256R1()).public_key()
    lines = valid = 0
    with open(path) as recorded:
        for line in recorded:
            lines += 1
            record = json.loads(line)
            header, payload, signature = record["body"]["jws-string"].split(".")
            raw = b64url_decode(signature)
            try:
                key = keys[json.loads(b64url_decode(header))["kid"]]
                key.verify(
                    encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big")),
                    f"{header}.{payload}".encode(),
                    ec.ECDSA(hashes.SHA256()),
                )
            except (KeyError, ValueError, InvalidSignature):
                continue
            valid += json.loads(b64url_decode(payload)) == record["payload"] and len(raw) == 64
    return lines, valid


def refusal_reasons(admin, network, token):
    """Counts by reason over the advertised app's and the ad network's refusal lists."""
    lists = [
        http("GET", f"{admin}/v1/admin/advertised-apps/1108187390/rejections", None, token)["rejections"],
        http("GET", f"{admin}/v1/admin/ad-networks/{network}/rejections", None, token)["rejections"],
    ]
    return dict(Counter(entry.get("reason", "?") for entries in lists for entry in entries))


def measure(bin_dir, out, scheduling):
    """The run's figures (report.json): each part in turn on one private Redis and the pipeline's
    services, every process it started stopped at the end. `scheduling` is the stages' CPU priority
    (`stage_scheduling`)."""
    global REDIS_PORT  # the run's Redis, for the helpers above
    children = Processes(out)
    redis_dir = None
    results = {
        "machine": {
            "cpus": os.cpu_count(),
            "kernel": os.uname().release,
            "stage_scheduling": " ".join(scheduling) or "none",
        }
    }
    try:
        # Reference limits.
        speed = subprocess.run(
            ["openssl", "speed", "-seconds", "3", "ecdsap256"], capture_output=True, text=True
        ).stdout
        results["openssl"] = openssl_rates(speed)
        REDIS_PORT = free_port()
        # Its AOF holds a million held postbacks by the end (gigabytes): removed once Redis has stopped.
        redis_dir = tempfile.mkdtemp(prefix="bench-redis-")
        start_redis(children, REDIS_PORT, redis_dir)
        bench = {}
        for pipeline in (1, 64):
            output = subprocess.run(
                [
                    "redis-benchmark",
                    "-p",
                    str(REDIS_PORT),
                    "-q",
                    "-n",
                    "200000",
                    "-P",
                    str(pipeline),
                    "XADD",
                    "bench",
                    "*",
                    "e",
                    "v",
                ],
                capture_output=True,
                text=True,
            ).stdout
            bench[f"xadd_per_s_pipeline_{pipeline}"] = requests_per_second(output)
        redis("DEL", "bench")
        results["redis_benchmark"] = bench
        results["loopback_floor"] = loopback_floor()

        # The pipeline's registry, through the admin API (the admin service).
        url = f"redis://127.0.0.1:{REDIS_PORT}/0"
        token = "bench-admin-token-of-at-least-32-characters"
        keys = os.path.join(out, "keys")
        pipeline = Pipeline(children, bin_dir, url, keys, token, CONVERSION_SETTLE_MS="0")
        receiver_port, ingest_port = free_port(), free_port()
        # A lag ceiling of 2 s of the batch capacity rather than the default 20 s: a 4 s offer at 5× then
        # reaches ingest's steady state under overload (shedding what the pipeline cannot drain) instead of
        # measuring how fast the buffer fills.
        lag_ceiling = {"INGEST_MAX_EVENTS_LAG": os.environ.get("BENCH_MAX_EVENTS_LAG", "20000")}
        ingest, admin = pipeline.start_http(ingest_port, ingest_env=lag_ceiling)
        network = Pipeline.NETWORK

        def register():
            pipeline.register(receiver_port)

        register()

        def worker(name, env=None):
            # The services' own CONSUMERS unless BENCH_CONSUMERS says otherwise.
            own = {"CONSUMERS": os.environ["BENCH_CONSUMERS"]} if "BENCH_CONSUMERS" in os.environ else {}
            return pipeline.start(name, {**own, **(env or {})}, prefix=scheduling)

        def load(kind, count, extra=()):
            subprocess.run(
                [
                    f"{bin_dir}/attribution-bench",
                    "preload",
                    "--redis-url",
                    url,
                    "--kind",
                    kind,
                    "--count",
                    str(count),
                    "--network",
                    network,
                    *extra,
                ],
                check=True,
                capture_output=True,
            )

        # verifier: N signed impressions (and an install per 4) waiting on `events`.
        load("impressions", N, ["--key-file", os.path.join(keys, "network.private.pem")])
        events = xlen("events")
        started = time.time()
        verifier = worker("verifier")
        until(lambda: group_done("events", "verifier"))
        wall = time.time() - started
        cpu = cpu_seconds(verifier.pid)
        results["verifier"] = {
            "events": events,
            "impressions": N,
            "wall_s": wall,
            "cpu_s": cpu,
            "impressions_per_cpu_s": N / cpu,
            "ratio_to_openssl_verify": N / cpu / results["openssl"]["verify_per_s"],
            "rejected": xlen("rejected"),
        }

        # attribution-winner: the verified impressions and installs.
        installs = events - N
        started = time.time()
        winner = worker("attribution-winner")
        until(
            lambda: group_done("verified", "attribution-winner") and group_done("winner:settled", "attribution-winner")
        )
        wall = time.time() - started
        results["attribution_winner"] = {
            "messages": events,
            "conversions": installs,
            "wall_s": wall,
            "cpu_s": cpu_seconds(winner.pid),
            "messages_per_s": events / wall,
            "conversions_per_s": installs / wall,
            "attributions": xlen("attributions"),
        }

        # scheduler: the attributed conversions become plans with window timers.
        started = time.time()
        scheduler = worker("scheduler", {"CROWD_TIER_THRESHOLDS": "1,1,1"})
        until(lambda: group_done("attributions", "scheduler"))
        wall = time.time() - started
        results["scheduler"] = {
            "conversions": installs,
            "wall_s": wall,
            "cpu_s": cpu_seconds(scheduler.pid),
            "plans_per_s": installs / wall,
        }

        # dispatcher: due postbacks to a local receiver (keep-alive HTTP; the receiver verifies each one).
        # The dispatcher starts first so its key is in the JWKS before the receiver fetches it; the
        # postbacks are loaded once both are up, and the clock starts then.
        dispatcher = worker("dispatcher")
        until(
            lambda: (
                "attribution-pipeline/0" in urllib.request.urlopen(f"{ingest}/.well-known/jwks.json").read().decode()
            ),
            30,
        )
        pipeline.start_receiver(receiver_port, os.path.join(out, "postbacks.jsonl"))
        time.sleep(1)
        cpu_before = cpu_seconds(dispatcher.pid)
        started = time.time()
        load("postbacks", POSTBACKS)
        until(lambda: http("GET", f"http://127.0.0.1:{receiver_port}/stats").get("accepted", 0) >= POSTBACKS)
        wall = time.time() - started
        results["dispatcher"] = {
            "postbacks": POSTBACKS,
            "wall_s": wall,
            "cpu_s": cpu_seconds(dispatcher.pid) - cpu_before,
            "deliveries_per_s": POSTBACKS / wall,
            "receiver_stats": http("GET", f"http://127.0.0.1:{receiver_port}/stats"),
        }

        # Hold-and-fire, ours and the peers' (same Redis, same verifying receiver): N deliveries all due
        # 2 s ahead; deliveries per second from that moment until the receiver has the last one.
        held = int(os.environ.get("BENCH_HOLD_AND_FIRE", "3000"))
        base = http("GET", f"http://127.0.0.1:{receiver_port}/stats")["accepted"]
        loaded = json.loads(
            subprocess.run(
                [
                    f"{bin_dir}/attribution-bench",
                    "preload",
                    "--redis-url",
                    url,
                    "--kind",
                    "held",
                    "--count",
                    str(held),
                    "--network",
                    network,
                ],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        due = loaded["loaded-at"] / 1000 + 2
        until(lambda: http("GET", f"http://127.0.0.1:{receiver_port}/stats")["accepted"] >= base + held)
        results["hold_and_fire"] = {
            "ours": {
                "deliveries": held,
                "seconds_after_due": time.time() - due,
                "per_s": held / max(0.001, time.time() - due),
            }
        }
        venv = os.path.join(out, "venv")
        try:
            subprocess.run([sys.executable, "-m", "venv", venv], check=True, capture_output=True)
            subprocess.run(
                [os.path.join(venv, "bin", "pip"), "install", "--quiet", *requirements("bench")],
                check=True,
                capture_output=True,
                timeout=600,
            )
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
            import bench_peers

            bench_peers.run_peers(
                venv,
                out,
                url,
                f"http://127.0.0.1:{receiver_port}",
                open(os.path.join(keys, "pipeline.private.pem")).read(),
                "attribution-pipeline/0",
                network,
                1108187390,
                held,
                results["hold_and_fire"],
            )
        except Exception as error:  # no network for PyPI, a peer that failed: reported, not fatal
            results["hold_and_fire"]["peers_error"] = str(error)

        # End to end (ingest → verifier → attribution-winner, all running): the capacity search
        # (scripts/bench_ramp.py) with single-event requests and with batches of 100, ingest latency at
        # half the single-event capacity, then offers of 2× and 5× each capacity: goodput, accepted p99,
        # shed, and every accepted impression accounted for in `verified`.
        key_file = os.path.join(keys, "network.private.pem")
        path = Bench(
            bin_dir,
            REDIS_PORT,
            ingest,
            network,
            key_file,
            {"ingest": children.running["ingest"], "verifier": verifier, "attribution-winner": winner},
            groups=[("events", "verifier"), ("verified", "attribution-winner")],
            streams=["events", "verified", "rejected"],
        )
        print("==> capacity: ingest → verifier → attribution-winner", flush=True)
        single = path.ramp(1)
        batch = path.ramp(BATCH, start=max(RAMP_START, int(single["capacity_per_s"] / RAMP_FACTOR)))
        latency_rate = int(os.environ.get("BENCH_LATENCY_RATE", "0")) or max(1, single["capacity_per_s"] // 2)
        rewrite_aof()
        results["ingest_latency"] = path.step(latency_rate, 1, float(os.environ.get("BENCH_LATENCY_SECONDS", "10")))[
            "figures"
        ]
        overload = {}
        for name, ramp in (("single", single), ("batch", batch)):
            for multiple in (2, 5):
                if not ramp["capacity_per_s"]:
                    continue
                rewrite_aof()
                record = path.step(multiple * ramp["capacity_per_s"], ramp["batch"], OVERLOAD_SECONDS)
                # Every accepted impression becomes one entry on `events` and, verified, one on `verified`,
                # which attribution-winner has consumed once the step drained.
                record.update(
                    multiple=multiple,
                    goodput_fraction=record["goodput_per_s"] / ramp["capacity_per_s"],
                    goodput_ceiling=goodput_ceiling(ramp, multiple, results["loopback_floor"]["us_per_request"]),
                    lost=max(0, record["accepted"] - record["added"]["verified"]),
                    # Requests that timed out in the tool after ingest had written them: not lost, unanswered.
                    written_unanswered=max(0, record["added"]["verified"] - record["accepted"]),
                    unlogged=record["accepted"] - record["added"]["events"],
                )
                overload[f"{name}_{multiple}x"] = record
                print(
                    f"  {name} at {multiple}× capacity ({record['rate']:,}/s): goodput {record['goodput_fraction']:.0%} of capacity, "
                    f"accepted p99 {record['accepted_p99_ms']:.1f} ms, shed {record['shed_fraction']:.1%}, lost {record['lost']}",
                    flush=True,
                )
        results["end_to_end"] = {
            "path": "ingest → verifier → attribution-winner (impressions)",
            "single": single,
            "batch": batch,
            "overload": overload,
        }

        # All five services: restarted with a day lasting a second (windows and delays play out in the
        # run), offered a campaign (impression, install, value update per device) in batches of 100, the
        # capacity search again; then the first-window postbacks of every accepted install (due 1–2 scaled
        # days after the window's end, 2 days after the install) arrive at the receiver.
        five = {
            "ingest": children.running["ingest"],
            "verifier": verifier,
            "attribution-winner": winner,
            "scheduler": scheduler,
            "dispatcher": dispatcher,
        }
        for process in five.values():
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)
        # From an empty Redis, its append-only file rewritten (see `rewrite_aof`): the campaign's own data
        # is all there is, and its rewrites come at the rate its writes cause them.
        redis("FLUSHALL")
        rewrite_aof()
        scaled = SCALED_DAY
        pipeline.start_http(ingest_port, ingest_env={**lag_ceiling, **scaled})
        five["ingest"] = children.running["ingest"]
        register()
        five["verifier"] = worker("verifier", scaled)
        five["attribution-winner"] = worker("attribution-winner", scaled)
        five["scheduler"] = worker("scheduler", scaled)
        five["dispatcher"] = worker("dispatcher", scaled)
        # The receiver plays the ad network, whose servers are not the pipeline's: on these shared cores it
        # records each postback now (`--signatures later`), and every recorded signature is verified after
        # the ramp (`verify_recorded`), so its ECDSA work is not counted against the five services.
        children.kill("receiver", signal.SIGTERM)
        campaign_postbacks = os.path.join(out, "campaign-postbacks.jsonl")
        pipeline.start_receiver(receiver_port, campaign_postbacks, "--signatures", "later")
        app_key = pipeline.app_key()
        time.sleep(2)
        received_before = http("GET", f"http://127.0.0.1:{receiver_port}/stats")["accepted"]
        started = time.time()
        campaign = Bench(
            bin_dir,
            REDIS_PORT,
            ingest,
            network,
            key_file,
            five,
            groups=[
                ("events", "verifier"),
                ("verified", "attribution-winner"),
                ("winner:settled", "attribution-winner"),
                ("attributions", "scheduler"),
            ],
            streams=["events", "verified", "attributions", "rejected"],
            queues=["winner:settling"],
            app_key=app_key,
            drain_groups=[("scheduler:timers", "scheduler"), ("postbacks", "dispatcher")],
            drain_queues=[
                "scheduler:windows",
                "scheduler:held:w0",
                "scheduler:held:w1",
                "scheduler:held:w2",
                "dispatcher:retries",
            ],
            warmup=FIVE_WARMUP_SECONDS,
        )
        print("==> capacity: all five services, a campaign in batches", flush=True)
        ramp = campaign.ramp(BATCH, start=max(RAMP_START, single["capacity_per_s"] // 2))
        accepted = {
            kind: sum(s["figures"]["acceptedByKind"].get(kind, 0) for s in ramp["steps"])
            for kind in ("install", "value-update")
        }
        installs = accepted["install"]
        # A first-window postback is due for each device whose impression, install and value update were
        # all accepted (the load tool counts them per step): an install whose update was shed has no
        # window (spec §4), one whose impression was shed nothing to attribute (the registry lists it as
        # refused, no-eligible-impression).
        due = sum(s["figures"]["completeDevices"] for s in ramp["steps"])
        until(
            lambda: http("GET", f"http://127.0.0.1:{receiver_port}/stats")["accepted"] - received_before >= due,
            120,
            every=1,
        )
        results["five_services"] = {
            "path": "all five services, a campaign (impression, install, value update per device)",
            "ramp": ramp,
            "capacity_per_s": ramp["capacity_per_s"],
            "installs": installs,
            "value_updates": accepted["value-update"],
            "postbacks_due": due,
            "wall_s": time.time() - started,
            "postbacks_received": http("GET", f"http://127.0.0.1:{receiver_port}/stats")["accepted"] - received_before,
            "refused_by_reason": refusal_reasons(admin, network, token),
        }
        lines, valid = verify_recorded(campaign_postbacks, f"{ingest}/.well-known/jwks.json")
        results["five_services"].update(postbacks_recorded=lines, signatures_valid=valid)
        if valid != lines:
            raise SystemExit(f"{lines - valid} of {lines} postbacks the campaign's receiver recorded do not verify")
        verifier, winner, scheduler, dispatcher = (
            five["verifier"],
            five["attribution-winner"],
            five["scheduler"],
            five["dispatcher"],
        )

        # Resident memory of each service after its run.
        results["rss_mib"] = {
            name: rss_mib(process.pid)
            for name, process in [
                ("ingest", children.running["ingest"]),
                ("verifier", verifier),
                ("attribution-winner", winner),
                ("scheduler", scheduler),
                ("dispatcher", dispatcher),
            ]
        }

        # Held postbacks: Redis bytes each, with HELD held, and hold/release rates.
        holding = subprocess.run(
            [
                f"{bin_dir}/attribution-bench",
                "holding",
                "--redis-url",
                url,
                "--count",
                str(HELD),
                "--comparison-count",
                "100000",
                "--json",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        results["holding"] = json.loads(holding)
    finally:
        children.stop_all()
        if redis_dir:
            shutil.rmtree(redis_dir, ignore_errors=True)
    return results


def hold_and_fire_line(figures):
    ours = figures["ours"]["per_s"]
    text = f"Hold-and-fire ({figures['ours']['deliveries']:,} deliveries due at once, POSTed to the verifying receiver): ours {ours:,.0f}/s"
    peers = {name: value for name, value in figures.items() if name not in ("ours", "peers_error")}
    for name, value in peers.items():
        text += f"; {name} {value['per_s']:,.0f}/s (ours is {ours / value['per_s']:.1f}×)"
    if "peers_error" in figures:
        text += f"; peers not measured: {figures['peers_error'][:200]}"
    if peers:
        text += f". Target: 3× the fastest peer ({ours / max(v['per_s'] for v in peers.values()):.1f}× here)."
    return text if text.endswith(".") else text + "."


def ramp_line(ramp):
    """The steps of one capacity search in the order run: rate, verdict, and why a bad step was bad."""
    return (
        f"Steps (batch {ramp['batch']}, events/s offered, in the order run): "
        + "; ".join(
            f"{s['rate']:,} "
            + ("again " if s.get("attempt", 1) > 1 else "")
            + ("✓" if s["good"] else "✗ (" + ", ".join(s["why_not"]) + ")")
            for s in ramp["steps"]
        )
        + "."
    )


def capacity_row(label, ramp, verify_per_s):
    """A row of the capacity table; CPU per event also in openssl verifies (`verify_per_s` on one core)."""
    verify_us = 1e6 / verify_per_s
    capacity, at = ramp["capacity_per_s"], ramp["at_capacity"] or {}
    return (
        f"| {label} | {capacity:,} | {capacity / verify_per_s:.1%} | {at.get('accepted_p99_ms', 0):.1f} | "
        + ", ".join(f"{name} {us:.0f} ({us / verify_us:.2f})" for name, us in at.get("cpu_us_per_event", {}).items())
        + f" | {at.get('redis_us_per_event', 0):.0f} ({at.get('redis_us_per_event', 0) / verify_us:.2f}); "
        f"rewrites {at.get('redis_rewrite_us_per_event', 0):.0f} | {at.get('redis_commands_per_event', 0):.1f} |"
    )


def overload_row(label, record):
    """A row of the overload table, one offer's figures."""
    return (
        f"| {label} | {record['rate']:,} | {record['goodput_per_s']:,.0f} | {record['goodput_fraction']:.0%} | "
        f"{record['accepted_p99_ms']:.1f} | {record['figures'].get('acceptedAnswerP99Milliseconds', 0):.1f} | "
        f"{record['figures'].get('sendingCPUSeconds', 0) * 1e6 / max(1, record['figures']['requests']):.1f} | "
        f"{'≤ %.0f %%' % (record['goodput_ceiling'] * 100) if record.get('goodput_ceiling') is not None else '–'} | {record['shed_fraction']:.1%} | {record['failed']:,} | {record['lost']:,}"
        + (
            f" ({record['written_unanswered']:,} written, answered too late)"
            if record.get("written_unanswered")
            else ""
        )
        + " |"
    )


def report_lines(results, overload_seconds=OVERLOAD_SECONDS, max_events_lag=None):
    """report.md, a line each, from the run's figures (report.json); `max_events_lag` is ingest's lag
    ceiling the run set (BENCH_MAX_EVENTS_LAG)."""
    if max_events_lag is None:
        max_events_lag = int(os.environ.get("BENCH_MAX_EVENTS_LAG", "20000"))
    o, v, w, s, d, h = (
        results["openssl"],
        results["verifier"],
        results["attribution_winner"],
        results["scheduler"],
        results["dispatcher"],
        results["holding"],
    )
    rb, lf = results["redis_benchmark"], results["loopback_floor"]
    e2e, five_figures, latency = results["end_to_end"], results["five_services"], results["ingest_latency"]
    verify_us = 1e6 / o["verify_per_s"]  # one openssl P-256 verify on one core, in µs

    single, batch, overload = e2e["single"], e2e["batch"], e2e["overload"]
    five_lost = sum(s["accepted"] - s["added"]["events"] for s in five_figures["ramp"]["steps"])
    lost_total = sum(r["lost"] for r in overload.values())
    lines = [
        "# Benchmark",
        "",
        f"One run on this machine ({results['machine']['cpus']} CPUs, Linux {results['machine']['kernel']}), private Redis with AOF (everysec); "
        f"the four stages under `{results['machine']['stage_scheduling']}`, ingest, Redis and the load tool at normal priority.",
        "",
        "| figure | measured | reference | ratio |",
        "|---|---|---|---|",
        f"| verifier impressions per CPU-second | {v['impressions_per_cpu_s']:,.0f} | openssl ECDSA P-256 verify/s (1 core): {o['verify_per_s']:,.0f} | {v['ratio_to_openssl_verify']:.0%} |",
        f"| attribution-winner messages/s (conversions/s) | {w['messages_per_s']:,.0f} ({w['conversions_per_s']:,.0f}) | redis-benchmark XADD/s unpipelined: {rb['xadd_per_s_pipeline_1']:,.0f} | {w['messages_per_s'] / rb['xadd_per_s_pipeline_1']:.0%} |",
        f"| scheduler plans/s | {s['plans_per_s']:,.0f} | redis-benchmark XADD/s pipelined (64): {rb['xadd_per_s_pipeline_64']:,.0f} | {s['plans_per_s'] / rb['xadd_per_s_pipeline_64']:.1%} |",
        f"| postbacks held/s, released/s | {h['scheduledPerSecond']:,.0f}, {h['releasedPerSecond']:,.0f} | redis-benchmark XADD/s pipelined (64): {rb['xadd_per_s_pipeline_64']:,.0f} | {h['releasedPerSecond'] / rb['xadd_per_s_pipeline_64']:.0%} (release) |",
        f"| dispatcher deliveries/s (local receiver, verifying) | {d['deliveries_per_s']:,.0f} | openssl ECDSA P-256 sign/s (1 core): {o['sign_per_s']:,.0f} | {d['deliveries_per_s'] / o['sign_per_s']:.0%} |",
        f"| Redis bytes per held postback ({h['held']:,} held) | {h['compactBytesPerHeld']:.1f} | target ≤ 300; JSON layout: {h['jsonLayoutBytesPerHeld']:.1f} | {h['compactBytesPerHeld'] / 300:.0%} of target |",
        "",
        "## Capacity",
        "",
        f"Found by the run itself (scripts/bench_ramp.py): the highest offered rate (events/s, open loop) at which ≥ 99 % of the "
        f"events were accepted, the accepted requests' p99 stayed ≤ 50 ms from each request's due time, and the stages' backlog "
        f"did not grow; {single['criteria']['step_seconds']:.0f} s steps from a drained pipeline, ×{single['criteria']['factor']} "
        f"until a step fails, then bisected; a failed step is run once more before it counts. openssl P-256 verify: {o['verify_per_s']:,.0f}/s on one core ({verify_us:.0f} µs). "
        "CPU per event is from the step at capacity, from its start until the pipeline drained; in brackets, in openssl verifies. "
        "The all-five ramp starts from an emptied Redis whose append-only file was just rewritten (the sections before it leave "
        "a gigabyte or more, whose next rewrite would take a core for seconds at whatever step it fell on); its own rewrites "
        "come as its writes cause them, and their CPU (a child of Redis, counted when one ends) is shown beside Redis's. "
        f"Each of its steps also waits until the window timers, held postbacks and deliveries of the steps before are done, and "
        f"offers its rate for {five_figures['ramp']['criteria'].get('warmup_seconds', 0):.0f} s before the judged seconds: an "
        "install's window timer and postback fall due seconds after it, so a step judged from a cold start would carry less than "
        "its rate's delayed work, and one right after a faster step more (its CPU per event counts all of it, until drained).",
        "",
        f"**Ingest → verifier → attribution-winner: {single['capacity_per_s']:,} events/s with single-event requests "
        f"({single['capacity_per_s'] / o['verify_per_s']:.0%} of openssl verify/s), {batch['capacity_per_s']:,} events/s in batches of "
        f"{batch['batch']} ({batch['capacity_per_s'] / o['verify_per_s']:.0%}).** All five services, a campaign in batches of "
        f"{five_figures['ramp']['batch']}: **{five_figures['capacity_per_s']:,} events/s** ({five_figures['capacity_per_s'] / o['verify_per_s']:.0%}).",
        "",
        "| path, requests | capacity (events/s) | of openssl verify/s | accepted p99 at capacity (ms) | CPU µs per event per process (openssl verifies) | Redis CPU µs/event; its append-only file's rewrites (a child process) | Redis commands/event |",
        "|---|---|---|---|---|---|---|",
        capacity_row("ingest → verifier → attribution-winner, single events", single, o["verify_per_s"]),
        capacity_row(f"ingest → verifier → attribution-winner, batches of {batch['batch']}", batch, o["verify_per_s"]),
        capacity_row(
            f"all five services, campaign, batches of {five_figures['ramp']['batch']}",
            five_figures["ramp"],
            o["verify_per_s"],
        ),
        "",
        ramp_line(single),
        "",
        ramp_line(batch),
        "",
        ramp_line(five_figures["ramp"]),
        "",
        "## Overload",
        "",
        f"Offers of 2× and 5× the capacity ({overload_seconds:.0f} s each): goodput is accepted events/s (until the last answer) "
        "as a share of the capacity; shed is the share refused at once (503 overloaded or pipeline-lagging, 429); failed counts "
        "timeouts (10 s), other errors and refused items; lost counts accepted impressions that never reached `verified` "
        f"(attribution-winner consumed all of `verified` before each count). **Accepted events lost: {lost_total}.**",
        "",
        "Each offer starts right after Redis rewrote its append-only file (`rewrite_aof` in scripts/bench.py): the sections "
        "before keep every stream entry, and a rewrite of that takes a core for seconds, whatever offer it falls on. "
        "Accepted p99 counts from each request's due time, so it includes any wait for one of the load tool's 128 connections; "
        "ingest's answer p99 counts from the accepted request's write to its answer. The load tool's CPU per request (sending "
        "and reading answers, on the same cores) is what the offer itself takes from the services.",
        "",
        f"The ceiling is the most any ingest could accept on these cores with the load tool beside it: every core working, each "
        f"accepted event costing what it cost at capacity (every process, Redis and the tool), and each refused request only "
        f"the loopback floor, a request and its answer over loopback TCP to a server doing next to nothing (redis-benchmark "
        f"PING_INLINE on {lf['connections']} connections, CPU of both ends): **{lf['us_per_request']:.1f} µs** here. "
        "The share of the refusals' cost above that floor is ingest's and the tool's to cut; the ceiling is not. It bounds "
        "what an offer sustains: a 4 s offer's goodput can pass it by the events ingest takes ahead of the stages, up to its "
        f"lag ceiling ({max_events_lag:,} events, "
        f"{max_events_lag / overload_seconds:,.0f}/s over a {overload_seconds:.0f} s offer).",
        "",
        "| offer | offered (events/s) | goodput (events/s) | of capacity | accepted p99 (ms) | ingest's answer p99 (ms) | load tool CPU µs/request | ceiling | shed | failed | lost |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *[overload_row(f"{name.split('_')[0]}, {r['multiple']}× capacity", r) for name, r in overload.items()],
        "",
        f"Ingest latency at half the single-event capacity ({latency['offeredPerSecond']:,}/s offered, open loop, from each request's due time, "
        "right after an append-only file rewrite like the offers, "
        f"every sample): p50 {latency['p50Milliseconds']:.1f} ms, **p99 {latency['p99Milliseconds']:.1f} ms**, "
        f"p99.9 {latency['p999Milliseconds']:.1f} ms, max {latency['maxMilliseconds']:.1f} ms "
        f"({latency['accepted']:,} accepted, {latency['shed']} shed, {latency['failed']} failed).",
        "",
        f"All five services after their ramp: {five_figures['postbacks_received']:,} postbacks signed and delivered of "
        f"{five_figures['postbacks_due']:,} due within {five_figures['wall_s']:.0f} s of the ramp's start; the receiver recorded them "
        f"unchecked (`--signatures later`, the ad network's ECDSA work kept off the pipeline's cores) and after the ramp "
        f"{five_figures['signatures_valid']:,} of {five_figures['postbacks_recorded']:,} recorded signatures verified. Due: one first-window postback per "
        f"device whose impression, install and value update were all accepted ({five_figures['installs']:,} installs and "
        f"{five_figures['value_updates']:,} updates accepted in all; without an update no window opens, spec §4, and an install whose "
        f"impression was shed is refused). Installs the pipeline refused, by reason (last 100 of each list): "
        f"{', '.join(f'{k} {v}' for k, v in five_figures['refused_by_reason'].items()) or 'none'}. Accepted events not on `events`: {five_lost}.",
        "",
        hold_and_fire_line(results["hold_and_fire"]),
        "",
        "Resident memory after the run (MiB): "
        + ", ".join(f"{k} {v:.0f}" for k, v in results["rss_mib"].items())
        + ".",
    ]
    return lines


def chart(results):
    """chart.svg: each headline figure as a bar of its ratio to its reference, then the ramps."""
    o, v, w, d, h = (
        results["openssl"],
        results["verifier"],
        results["attribution_winner"],
        results["dispatcher"],
        results["holding"],
    )
    rb = results["redis_benchmark"]
    e2e, five_figures = results["end_to_end"], results["five_services"]
    single, batch, overload = e2e["single"], e2e["batch"], e2e["overload"]
    bars = [
        ("verifier vs openssl verify", v["ratio_to_openssl_verify"]),
        ("winner vs XADD unpipelined", w["messages_per_s"] / rb["xadd_per_s_pipeline_1"]),
        ("release vs XADD pipelined", h["releasedPerSecond"] / rb["xadd_per_s_pipeline_64"]),
        ("dispatcher vs openssl sign", d["deliveries_per_s"] / o["sign_per_s"]),
        ("bytes/held vs 300 target", h["compactBytesPerHeld"] / 300),
    ]
    width, row = 640, 34
    svg = ['<text x="10" y="20" font-weight="bold">Measured / reference (same run)</text>']
    for i, (label, ratio) in enumerate(bars):
        y = 34 + i * row
        length = max(1, min(380, ratio * 380))
        svg += [
            f'<text x="10" y="{y + 16}">{label}</text>',
            f'<rect x="220" y="{y + 4}" width="{length:.0f}" height="18" fill="#4a7bd0"/>',
            f'<text x="{225 + length:.0f}" y="{y + 17}">{ratio:.0%}</text>',
        ]
    # The ramps below the bars: offered vs accepted events/s and accepted p99 per step.
    panels = [
        (
            "ingest → verifier → winner, single events",
            single,
            [r for k, r in overload.items() if k.startswith("single")],
        ),
        (
            f"ingest → verifier → winner, batches of {batch['batch']}",
            batch,
            [r for k, r in overload.items() if k.startswith("batch")],
        ),
        (f"all five services, campaign, batches of {five_figures['ramp']['batch']}", five_figures["ramp"], []),
    ]
    ramp_rows, ramp_height = ramp_chart(panels)
    offset = row * len(bars) + 50
    svg += [f'<g transform="translate(0,{offset})">', *ramp_rows, "</g>"]
    svg = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{offset + ramp_height}" font-family="sans-serif" font-size="13">',
        *svg,
        "</svg>",
    ]
    return svg


def main():
    bin_dir = sys.argv[1]
    use_binaries(bin_dir)
    out = os.path.abspath(sys.argv[2])
    scheduling = stage_scheduling(os.environ.get("BENCH_STAGE_SCHEDULING", "idle"))
    os.makedirs(out, exist_ok=True)
    results = measure(bin_dir, out, scheduling)
    lines = report_lines(results)
    open(os.path.join(out, "report.md"), "w").write("\n".join(lines) + "\n")
    open(os.path.join(out, "report.json"), "w").write(json.dumps(results, indent=2) + "\n")
    open(os.path.join(out, "chart.svg"), "w").write("\n".join(chart(results)) + "\n")
    print("\n".join(lines))
    print(f"\nreport: {out}/report.md, report.json, chart.svg")


if __name__ == "__main__":
    main()
