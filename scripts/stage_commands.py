#!/usr/bin/env python3
"""Redis commands per event, per stage and per command type.

Usage: scripts/stage_commands.py BIN OUT  (BIN: the release binaries' directory)

A private Redis (AOF everysec, as in bench.py), a campaign offered to ingest (`attribution-bench load
--app-key`: impression, install, value update per device, a day lasting a second), then each stage
alone on what the previous one left, one after the other: ingest, verifier, attribution-winner,
scheduler (until every window has closed and every held postback is released), dispatcher (until the
receiver has every postback). Around each phase `INFO commandstats` is read; the difference, minus
this script's own probes, divided by the campaign's accepted events, is that stage's cost. A stage's
idle loops (timer polls, gauges) while it waits count too: they are part of what it costs.
Writes commands.json and commands.md into OUT and prints the table. With TOGETHER=1, bench.py's
five-services figure instead: all five at once, counted until one first-window postback per install
has arrived (CAMPAIGN_RATE=3000 as there)."""

import collections
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import time

from harness import (
    SCALED_DAY,
    Pipeline,
    Processes,
    RedisConnection,
    cpu_seconds,
    free_port,
    http,
    partitioned,
    redis_cli,
    start_redis,
    until,
    use_binaries,
    wait_http,
)
from harness import (
    group_done as harness_group_done,
)

RATE = int(os.environ.get("CAMPAIGN_RATE", "1500"))
SECONDS = float(os.environ.get("CAMPAIGN_SECONDS", "10"))
PORT = None  # the private Redis (main sets it)
own = collections.Counter()  # commands this script sent, by name (subtracted from each phase)


def redis(*args):
    own[str(args[0]).lower() if args[0] != "XINFO" else "xinfo|groups"] += 1
    return redis_cli(PORT, *args)


def calls(text):
    """Calls per command from `INFO commandstats`."""
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"cmdstat_([^:]+):calls=(\d+)", text)}


def commandstats():
    own["info"] += 1
    return calls(redis_cli(PORT, "INFO", "commandstats"))


def difference(before, after, probes):
    """A phase's commands: the calls between the two readings less this script's own `probes`, by
    name, those it made at all."""
    delta = {k: after.get(k, 0) - before.get(k, 0) - probes.get(k, 0) for k in after}
    return {k: v for k, v in sorted(delta.items()) if v > 0}


def group_done(stream, group):
    """Every partition of `stream` read and acknowledged by `group`: harness.group_done's one pipelined
    XINFO GROUPS per partition, counted as this script's own commands."""
    global OBSERVER
    if OBSERVER is None:
        OBSERVER = RedisConnection(PORT)
    own["xinfo|groups"] += len(partitioned(stream))
    return harness_group_done(OBSERVER, stream, group)


OBSERVER = None


def queues_empty(*queues):
    return all(redis("ZCARD", name + ":due") == "0" for queue in queues for name in partitioned(queue))


def measure(name, body):
    own.clear()
    before = commandstats()
    started = time.time()
    body()
    after = commandstats()
    phases[name] = {"wall_s": time.time() - started, "commands": difference(before, after, own)}


phases = {}


def table(phases, offered, postbacks, received, cpu, seconds=SECONDS):
    """commands.md: per accepted event, a row per command (those above 0.005 in all), a column per
    phase in the order run, and the totals; then each phase's seconds and each stage's CPU."""
    events = max(1, offered.get("accepted", 0))
    names = sorted(
        {c for p in phases.values() for c in p["commands"]},
        key=lambda c: -sum(p["commands"].get(c, 0) for p in phases.values()),
    )
    stages = list(phases)
    lines = [
        f"Campaign: {offered.get('accepted')} events accepted ({offered.get('offeredPerSecond')}/s offered for {seconds:.0f} s), "
        f"{postbacks} postbacks, {received} received. Redis commands per accepted event:",
        "",
        "| command | " + " | ".join(stages) + " | all |",
        "|---|" + "---|" * (len(stages) + 1),
    ]
    for name in names:
        row = [phases[s]["commands"].get(name, 0) / events for s in stages]
        if sum(row) >= 0.005:
            lines.append(f"| {name} | " + " | ".join(f"{v:.2f}" if v else "" for v in row) + f" | {sum(row):.2f} |")
    totals = [sum(phases[s]["commands"].values()) / events for s in stages]
    lines.append("| **total** | " + " | ".join(f"**{v:.2f}**" for v in totals) + f" | **{sum(totals):.2f}** |")
    lines += [
        "",
        "Phase seconds: "
        + ", ".join(f"{s} {phases[s]['wall_s']:.1f}" for s in stages)
        + "; stage CPU seconds: "
        + ", ".join(f"{k} {v:.2f}" for k, v in cpu.items()),
    ]
    return lines


def main():
    global PORT
    bin_dir, out = sys.argv[1], os.path.abspath(sys.argv[2])
    use_binaries(bin_dir)
    os.makedirs(out, exist_ok=True)
    children = Processes(out)
    together_mode = os.environ.get("TOGETHER") == "1"
    redis_dir = None
    try:
        PORT = free_port()
        redis_dir = tempfile.mkdtemp(prefix="stage-commands-redis-")
        store = start_redis(children, PORT, redis_dir)
        url, token = f"redis://127.0.0.1:{PORT}/0", "commands-admin-token-of-at-least-32-characters"
        keys = os.path.join(out, "keys")
        pipeline = Pipeline(children, bin_dir, url, keys, token, **SCALED_DAY)
        receiver_port = free_port()
        ingest, admin = pipeline.start_http()
        pipeline.register(receiver_port)
        app_key = pipeline.app_key()
        worker = pipeline.start

        def stop(name):
            children.kill(name, signal.SIGTERM)

        offered = {}
        if together_mode:
            # bench.py's last phase: all five at once, a saturating offer, counted from the offer until the
            # receiver has one first-window postback per install (everything the whole pipeline sent meanwhile).
            pipeline.start_receiver(receiver_port, os.path.join(out, "postbacks.jsonl"))
            for name in ("verifier", "attribution-winner", "scheduler", "dispatcher"):
                worker(name)
            time.sleep(2)

            def together():
                offered.update(pipeline.offer(RATE, SECONDS, app_key))
                until(
                    lambda: (
                        http("GET", f"http://127.0.0.1:{receiver_port}/stats").get("accepted", 0)
                        >= offered["accepted"] // 3
                    ),
                    120,
                    every=0.5,
                )

            names = ("ingest", "verifier", "attribution-winner", "scheduler", "dispatcher")
            pids = {**{name: children.running[name].pid for name in names}, "redis": store.pid}
            cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
            measure("all five", together)
            cpu = {
                name: round((cpu_seconds(pid) - cpu_before[name]) * 1e6 / max(1, offered["accepted"]))
                for name, pid in pids.items()
            }
            children.stop_all()
            events = max(1, offered["accepted"])
            commands = phases["all five"]["commands"]
            print(
                json.dumps(
                    {
                        "offered": offered,
                        "wall_s": phases["all five"]["wall_s"],
                        "commands_per_event": sum(commands.values()) / events,
                        "cpu_us_per_event": cpu,
                        "by_command": {
                            k: round(v / events, 3) for k, v in sorted(commands.items(), key=lambda kv: -kv[1])
                        },
                    },
                    indent=1,
                )
            )
            sys.exit(0)

        def ingest_phase():
            offered.update(pipeline.offer(RATE, SECONDS, app_key))

        measure("ingest", ingest_phase)
        stop("ingest")

        cpu = {}

        def stage_phase(name, done, env=None):
            def body():
                process = worker(name, env)
                until(done, 900, every=0.5)
                cpu[name] = cpu_seconds(process.pid)
                stop(name)

            measure(name, body)

        stage_phase("verifier", lambda: group_done("events", "verifier"))
        stage_phase(
            "attribution-winner",
            lambda: (
                group_done("verified", "attribution-winner")
                and queues_empty("winner:settling")
                and group_done("winner:settled", "attribution-winner")
            ),
        )
        stage_phase(
            "scheduler",
            lambda: (
                group_done("attributions", "scheduler")
                and queues_empty("scheduler:windows", "scheduler:held:w0", "scheduler:held:w1", "scheduler:held:w2")
                and group_done("scheduler:timers", "scheduler")
            ),
        )

        # The dispatcher publishes its keys; ingest serves them to the receiver, which verifies every postback.
        children.restart("ingest")
        wait_http(ingest + "/health")
        postbacks = sum(int(redis("XLEN", name) or 0) for name in partitioned("postbacks"))

        def dispatcher_phase():
            process = worker("dispatcher")
            until(lambda: "attribution-pipeline/0" in http("GET", f"{ingest}/.well-known/jwks.json").__str__(), 30)
            pipeline.start_receiver(receiver_port, os.path.join(out, "postbacks.jsonl"))
            until(lambda: group_done("postbacks", "dispatcher") and queues_empty("dispatcher:retries"), 900, every=0.5)
            cpu["dispatcher"] = cpu_seconds(process.pid)
            stop("dispatcher")

        measure("dispatcher", dispatcher_phase)
        received = http("GET", f"http://127.0.0.1:{receiver_port}/stats").get("accepted", 0)
    finally:
        children.stop_all()
        if redis_dir:
            shutil.rmtree(redis_dir, ignore_errors=True)

    lines = table(phases, offered, postbacks, received, cpu)
    open(os.path.join(out, "commands.md"), "w").write("\n".join(lines) + "\n")
    open(os.path.join(out, "commands.json"), "w").write(
        json.dumps(
            {"offered": offered, "postbacks": postbacks, "received": received, "phases": phases, "cpu_s": cpu}, indent=2
        )
        + "\n"
    )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
