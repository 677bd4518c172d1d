#!/usr/bin/env python3
"""Throughput against round-trip time (scripts/bench.sh runs it after bench.py, in the same run): a
deployment's Redis is rarely on the services' host. Each of the five services is measured as bench.py
measures it alone (the verifier, attribution-winner and the scheduler each draining a preloaded
stream, the dispatcher delivering preloaded due postbacks to a receiver, ingest taking an offer of
signed impressions in batches of 100 far above what it can take), first with the services on Redis
directly over loopback, then through a relay that adds 0, 1 and 10 ms to every round trip
(`attribution relay`, on one event loop; the kernel has no netem), and last over TLS to a Redis that is
TLS only and demands client certificates (over loopback, no relay). Each figure is reported as a ratio
to the loopback figure; the relay at 0 ms shows what the relay itself costs. Targets: ≥ 80 % at 1 ms,
≥ 85 % over TLS. A fresh Redis for each setting. Writes OUT/rtt.json and appends a section to OUT/report.md.

  bench_rtt.py BIN OUT

Environment: BENCH_RTT_IMPRESSIONS (30000), BENCH_RTT_POSTBACKS (10000), BENCH_RTT_OFFER (160000 events/s
for 3 s); to explore: BENCH_RTT_SETTINGS (labels to measure, comma-separated, e.g. "loopback,+1 ms,TLS"),
BENCH_RTT_ENV (settings for the services, e.g. "BATCH_SIZE=500"), BENCH_RTT_REPLICAS (replicas of each
draining stage, 1)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from harness import (
    Pipeline,
    Processes,
    RedisConnection,
    free_port,
    group_done,
    group_entry,
    http,
    partitioned,
    start_redis,
    until,
    use_binaries,
    use_plaintext,
    wait_redis,
)

IMPRESSIONS = int(os.environ.get("BENCH_RTT_IMPRESSIONS", "30000"))
POSTBACKS = int(os.environ.get("BENCH_RTT_POSTBACKS", "10000"))
OFFER = int(os.environ.get("BENCH_RTT_OFFER", "160000"))
TOKEN = "bench-admin-token-of-at-least-32-characters"
NETWORK = "rtt.adattributionkit"
RELAY_ZERO = "relay, +0 ms"
TLS = "TLS"
# (label, the relay's added milliseconds, or None for none, or TLS for a TLS-only Redis).
ALL_SETTINGS = [("loopback", None), (RELAY_ZERO, 0), ("+1 ms", 1), ("+10 ms", 10), (TLS, TLS)]
TLS_TARGET = 0.85


def chosen_settings(labels):
    """The settings to measure, in their order: those `labels` names (comma-separated, e.g. "loopback,+1 ms"
    to measure fewer), or all of them when it is empty."""
    if not labels:
        return list(ALL_SETTINGS)
    return [setting for setting in ALL_SETTINGS if setting[0] in labels.split(",")]


def extra_env(text):
    """Extra settings for the services under test from "BATCH_SIZE=500 CONSUMERS=2"."""
    return dict(item.split("=", 1) for item in text.split())


SETTINGS = chosen_settings(os.environ.get("BENCH_RTT_SETTINGS"))
REPLICAS = int(os.environ.get("BENCH_RTT_REPLICAS", "1"))  # of each stage draining a stream
EXTRA = extra_env(os.environ.get("BENCH_RTT_ENV", ""))
SERVICES = [
    ("ingest", "events/s accepted"),
    ("verifier", "impressions/s"),
    ("attribution-winner", "messages/s"),
    ("scheduler", "conversions/s"),
    ("dispatcher", "deliveries/s"),
]


def measure(bin_dir, out, label, delay):
    """Each service's figure with the services on Redis directly (`delay` None), through the relay, or
    (`delay` TLS) on a Redis that is TLS only."""
    children = Processes(os.path.join(out, "rtt-" + label.replace(" ", "").replace(",", "-").replace("+", "")))
    os.makedirs(children.out, exist_ok=True)
    data = tempfile.mkdtemp(prefix="bench-rtt-")
    try:
        port = free_port()
        start_redis(children, port, data, aof=False, tls=delay == TLS)
        direct = f"{'rediss' if delay == TLS else 'redis'}://127.0.0.1:{port}/0"
        observer = RedisConnection(port)
        url = direct
        if delay is not None and delay != TLS:
            relay_port, delay_file = free_port(), os.path.join(data, "delay-ms")
            with open(delay_file, "w") as f:
                f.write(str(delay))
            children.start(
                "relay",
                [
                    f"{bin_dir}/attribution",
                    "relay",
                    "--listen",
                    f"127.0.0.1:{relay_port}",
                    "--upstream",
                    f"127.0.0.1:{port}",
                    "--delay-file",
                    delay_file,
                ],
            )
            wait_redis(relay_port)
            url = f"redis://127.0.0.1:{relay_port}/0"
        keys = os.path.join(data, "keys")
        pipeline = Pipeline(children, bin_dir, url, keys, TOKEN, **{"CONVERSION_SETTLE_MS": "0", **EXTRA})
        receiver_port = free_port()
        ingest, _ = pipeline.start_http(ingest_env={"INGEST_MAX_EVENTS_LAG": "0"})
        pipeline.register(receiver_port, NETWORK)

        def load(kind, count, extra=()):
            subprocess.run(
                [
                    f"{bin_dir}/attribution-bench",
                    "preload",
                    "--redis-url",
                    direct,
                    "--kind",
                    kind,
                    "--count",
                    str(count),
                    "--network",
                    NETWORK,
                    *extra,
                ],
                check=True,
                capture_output=True,
            )

        def backlog(stream, group):
            """The group's unacknowledged entries over every partition; None until it exists on all."""
            replies = observer.pipeline([("XINFO", "GROUPS", name) for name in partitioned(stream)])
            entries = [group_entry(reply, group) for reply in replies]
            if any(entry is None for entry in entries):
                return None
            return sum(int(entry.get("lag") or 0) + int(entry.get("pending") or 0) for entry in entries)

        def drained(name, stream, group, count, env=None):
            """Messages/s from the first acknowledgement until the stream is drained: a process's start
            (and its first connections) is no part of its throughput."""
            for replica in range(REPLICAS):
                pipeline.start(name, env, process=f"{name}-{replica}" if replica else name)
            first = {}

            def started():
                left = backlog(stream, group)
                if left is not None and left < count:
                    first.update(time=time.time(), left=left)
                return bool(first)

            if not until(started, 60, 0.002):
                raise SystemExit(f"rtt ({label}): {name} acknowledged nothing of {stream} in 60 s")
            if not until(lambda: group_done(observer, stream, group), 600, 0.01):
                raise SystemExit(f"rtt ({label}): {name} did not drain {stream} in 600 s")
            return first["left"] / (time.time() - first["time"])

        figures = {}
        load("impressions", IMPRESSIONS, ["--key-file", os.path.join(keys, "network.private.pem")])
        events = sum(observer.pipeline([("XLEN", name) for name in partitioned("events")]))
        figures["verifier"] = drained("verifier", "events", "verifier", IMPRESSIONS)
        figures["attribution-winner"] = drained("attribution-winner", "verified", "attribution-winner", events)
        figures["scheduler"] = drained(
            "scheduler", "attributions", "scheduler", events - IMPRESSIONS, {"CROWD_TIER_THRESHOLDS": "1,1,1"}
        )

        pipeline.start("dispatcher")
        pipeline.start_receiver(receiver_port, os.path.join(children.out, "postbacks.jsonl"), "--signatures", "later")
        receiver = f"http://127.0.0.1:{receiver_port}"
        time.sleep(2)  # the dispatcher's groups made, the registry cached
        before = http("GET", receiver + "/stats").get("accepted", 0)
        started = time.time()
        load("postbacks", POSTBACKS)
        if not until(lambda: http("GET", receiver + "/stats").get("accepted", 0) >= before + POSTBACKS, 600, 0.02):
            raise SystemExit(f"rtt ({label}): the postbacks did not all arrive in 600 s")
        figures["dispatcher"] = POSTBACKS / (time.time() - started)
        for name in ("verifier", "attribution-winner", "scheduler", "dispatcher"):
            children.kill(name)

        # ingest alone: an offer far above its capacity, in batches of 100; what it accepts per second.
        offered = subprocess.run(
            [
                f"{bin_dir}/attribution-bench",
                "load",
                "--ingest-url",
                ingest,
                "--rate",
                str(OFFER),
                "--duration",
                "3",
                "--network",
                NETWORK,
                "--key-file",
                os.path.join(keys, "network.private.pem"),
                "--batch",
                "100",
            ],
            capture_output=True,
            text=True,
        )
        outcome = json.loads(offered.stdout.strip().splitlines()[-1])
        figures["ingest"] = outcome["accepted"] / 3
        print(f"  {label}: " + ", ".join(f"{name} {figures[name]:,.0f}/s" for name, _ in SERVICES), flush=True)
        return figures
    finally:
        children.stop_all()
        shutil.rmtree(data, ignore_errors=True)
        use_plaintext()


def ratios(results):
    """Each figure as a ratio to the loopback one, and the relayed settings' (+1 ms, +10 ms) to the
    relay's own at 0 ms (the added time alone: the relay shares the services' cores); none of the
    latter without a relay at 0 ms."""
    loopback = results["loopback"]
    to_loopback = {
        label: {name: figures[name] / loopback[name] for name, _ in SERVICES} for label, figures in results.items()
    }
    relay = results.get(RELAY_ZERO)
    to_relay = {
        label: {name: figures[name] / relay[name] for name, _ in SERVICES}
        for label, figures in results.items()
        if relay and label.startswith("+")
    }
    return to_loopback, to_relay


def report_section(results, to_loopback, to_relay, settings=SETTINGS):
    """The section appended to report.md: a row per service, a column per setting after loopback."""
    loopback = results["loopback"]
    lines = [
        "",
        "## Throughput against round-trip time to Redis",
        "",
        "Each service measured alone as above (stages draining preloaded streams, "
        f"{IMPRESSIONS:,} impressions and their installs, {POSTBACKS:,} due postbacks; ingest offered {OFFER:,} "
        "events/s in batches of 100 for 3 s), with the services on Redis over loopback, then through a relay "
        "adding 0, 1 and 10 ms to every round trip, then over TLS (a TLS-only Redis demanding client "
        "certificates, over loopback). Ratios to the loopback figure (targets: ≥ 80 % at 1 ms, ≥ 85 % over "
        "TLS), then to the relay's own figure at 0 ms (the added time alone).",
        "",
        "| service | loopback | " + " | ".join(label for label, _ in settings[1:]) + " |",
        "|---|---|" + "---|" * (len(settings) - 1),
    ]
    for name, unit in SERVICES:
        cells = [
            f"{results[label][name]:,.0f} ({to_loopback[label][name]:.0%}"
            + (f"; {to_relay[label][name]:.0%})" if label in to_relay else ")")
            for label, _ in settings[1:]
        ]
        lines.append(f"| {name} ({unit}) | {loopback[name]:,.0f} | " + " | ".join(cells) + " |")
    return lines


def main():
    bin_dir, out = sys.argv[1], os.path.abspath(sys.argv[2])
    use_binaries(bin_dir)
    print("==> throughput against round-trip time", flush=True)
    results = {label: measure(bin_dir, out, label, delay) for label, delay in SETTINGS}
    to_loopback, to_relay = ratios(results)
    with open(os.path.join(out, "rtt.json"), "w") as f:
        json.dump(
            {
                "figures": results,
                "ratios": to_loopback,
                "ratios_to_relay_at_0_ms": to_relay,
                "target_at_1_ms": 0.8,
                "target_tls": TLS_TARGET,
            },
            f,
            indent=2,
        )
    lines = report_section(results, to_loopback, to_relay)
    with open(os.path.join(out, "report.md"), "a") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines[-len(SERVICES) - 2 :]))


if __name__ == "__main__":
    main()
