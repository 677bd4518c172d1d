#!/usr/bin/env python3
"""The scale part of the benchmark (scripts/bench.sh runs it after bench.py, in the same run): all five
services on one Redis and on a local Redis Cluster of 3 primaries (each with a replica), offered the
same campaign at the five services' capacity bench.py found on one Redis (batches; see campaign_offer:
the cluster, slower on these shared cores, sheds part of it); sustained events/s, Redis CPU per event (all nodes, and the
primaries alone), Redis commands per event, CPU per service; then each service's CPU while idle (the
pipeline empty, nothing arriving) as a share of one core. Writes OUT/scale.json.

  bench_scale.py BIN OUT
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import redis

from harness import (
    PARTITIONS,
    SCALED_DAY,
    Pipeline,
    Processes,
    RedisCluster,
    cpu_seconds,
    free_port,
    group_entry,
    http,
    partitioned,
    redis_cli,
    redis_info_cpu_seconds,
    start_redis,
    until,
    use_binaries,
)


def campaign_offer(out, environ=os.environ):
    """The campaign's rate and batch: BENCH_CAMPAIGN_RATE and BENCH_CAMPAIGN_BATCH when set, else the
    capacity bench.py found for all five services (report.json, same run) in its batches, so that a
    slower machine is not offered more than it takes (3000 events/s, single events, without a report)."""
    try:
        with open(os.path.join(out, "report.json")) as f:
            ramp = json.load(f)["five_services"]["ramp"]
        found = (ramp["capacity_per_s"], ramp["batch"]) if ramp["capacity_per_s"] else (3000, 1)
    except (OSError, KeyError, ValueError):
        found = (3000, 1)
    return (environ.get("BENCH_CAMPAIGN_RATE", str(found[0])), environ.get("BENCH_CAMPAIGN_BATCH", str(found[1])))


IDLE_SECONDS = float(os.environ.get("BENCH_IDLE_SECONDS", "20"))
SERVICES = ("ingest", "verifier", "attribution-winner", "scheduler", "dispatcher")


def counters(ports):
    """Redis CPU seconds (user + system) and commands processed, per node."""
    result = {}
    for port in ports:
        cpu, stats = redis_cli(port, "INFO", "cpu"), redis_cli(port, "INFO", "stats")
        result[port] = (redis_info_cpu_seconds(cpu), int(re.search(r"total_commands_processed:(\d+)", stats).group(1)))
    return result


def aof_size(port):
    """The append-only file's size in bytes (INFO persistence; 0 without one)."""
    match = re.search(r"aof_current_size:(\d+)", redis_cli(port, "INFO", "persistence"))
    return int(match.group(1)) if match else 0


def stream_memory(port):
    """Bytes every stream takes in Redis's memory (MEMORY USAGE of each, all of its entries counted)."""
    client = redis.Redis(host="127.0.0.1", port=port)
    return sum(client.memory_usage(key, samples=0) or 0 for key in client.scan_iter(_type="stream", count=1000))


def run(bin_dir, out, mode, rate, batch):
    children = Processes(os.path.join(out, f"scale-{mode}"))
    os.makedirs(children.out, exist_ok=True)
    redis_dir = ""  # one Redis: its data directory, made below
    try:
        if mode == "cluster":
            cluster = RedisCluster(children, children.out)
            ports, primaries, url = cluster.ports, cluster.primaries(), cluster.url
            redis_env = {"REDIS_URL": url, "REDIS_CLUSTER": "true"}
            cli = ["redis-cli", "-c", "-p", str(ports[0])]
        else:
            port = free_port()
            redis_dir = tempfile.mkdtemp(prefix="bench-redis-")
            start_redis(children, port, redis_dir)
            ports, primaries, url = [port], [port], f"redis://127.0.0.1:{port}/0"
            redis_env = {"REDIS_URL": url}
            cli = ["redis-cli", "-p", str(port)]

        def redis(*args):
            options = [a for a in args if a == "--json"]
            command = [str(a) for a in args if a != "--json"]
            # XINFO STREAM shows entries: JSON, but an entry left by 0.1.0 may be binary (not UTF-8).
            return (
                subprocess.run([*cli, *options, *command], capture_output=True)
                .stdout.decode("utf-8", "replace")
                .strip()
            )

        def group_done(stream, group):
            """Every partition of `stream` read and acknowledged by `group`."""
            for name in partitioned(stream):
                try:
                    entry = group_entry(json.loads(redis("--json", "XINFO", "GROUPS", name)), group)
                except ValueError:
                    return False
                if entry is None or entry.get("pending") != 0:
                    return False
                # Lag counters drift when a stream moves between nodes: the last id handed out decides.
                if (entry.get("lag") or 0) != 0:
                    last = json.loads(redis("--json", "XINFO", "STREAM", name) or "{}").get("last-generated-id")
                    if entry.get("last-delivered-id") != last:
                        return False
            return True

        token = "bench-admin-token-of-at-least-32-characters"
        keys = os.path.join(children.out, "keys")
        env = {**redis_env, "PARTITIONS": str(PARTITIONS), **SCALED_DAY}
        pipeline = Pipeline(children, bin_dir, env["REDIS_URL"], keys, token, **env)
        receiver_port = free_port()
        ingest, _ = pipeline.start_http()
        processes = {"ingest": children.running["ingest"]}
        for name in SERVICES[1:]:
            processes[name] = pipeline.start(name)
        until(lambda: '"kid"' in json.dumps(http("GET", ingest + "/.well-known/jwks.json")), 30)
        pipeline.start_receiver(receiver_port, os.path.join(children.out, "postbacks.jsonl"))
        pipeline.register(receiver_port)
        app_key = pipeline.app_key()
        time.sleep(2)

        for p in primaries:
            redis_cli(p, "CONFIG", "RESETSTAT")
        # Idle: everything started, nothing arriving.
        idle_before = {name: cpu_seconds(p.pid) for name, p in processes.items()}
        redis_idle_before = counters(ports)
        time.sleep(IDLE_SECONDS)
        idle = {name: (cpu_seconds(p.pid) - idle_before[name]) / IDLE_SECONDS for name, p in processes.items()}
        redis_idle_after = counters(ports)
        idle["redis"] = sum(redis_idle_after[p][0] - redis_idle_before[p][0] for p in ports) / IDLE_SECONDS

        if mode == "single":
            # No rewrite during the campaign: the file's growth is then exactly what the campaign appended.
            redis_cli(port, "CONFIG", "SET", "auto-aof-rewrite-percentage", "0")
            stored_before = (aof_size(port), stream_memory(port))
        cpu_before = {name: cpu_seconds(p.pid) for name, p in processes.items()}
        redis_before = counters(ports)
        started = time.time()
        offered = pipeline.offer(rate, 10, app_key, "--batch", batch)
        until(
            lambda: all(
                group_done(stream, group)
                for stream, group in [
                    ("events", "verifier"),
                    ("verified", "attribution-winner"),
                    ("winner:settled", "attribution-winner"),
                    ("attributions", "scheduler"),
                ]
            ),
            600,
            0.5,
        )
        planned_s = time.time() - started
        redis_after = counters(ports)
        stored = {}
        if mode == "single":
            # Bytes per accepted event: what the streams hold (every message of the path, the campaign's
            # only entries) and what the append-only file grew by (messages, states, plans, queues).
            aof, streams = aof_size(port) - stored_before[0], stream_memory(port) - stored_before[1]
            stored = {
                "stream_bytes_per_event": streams / max(1, offered["accepted"]),
                "aof_bytes_per_event": aof / max(1, offered["accepted"]),
            }
        commandstats = {}
        for p in primaries:
            for line in redis_cli(p, "INFO", "commandstats").splitlines():
                match = re.match(r"cmdstat_([\w|]+):calls=(\d+),usec=(\d+)", line)
                if match:
                    calls, usec = commandstats.get(match.group(1), (0, 0))
                    commandstats[match.group(1)] = (calls + int(match.group(2)), usec + int(match.group(3)))
        cpu = {name: cpu_seconds(p.pid) - cpu_before[name] for name, p in processes.items()}
        accepted = max(1, offered["accepted"])
        redis_cpu = {p: redis_after[p][0] - redis_before[p][0] for p in ports}
        commands = sum(redis_after[p][1] - redis_before[p][1] for p in primaries)
        return {
            "mode": mode,
            "nodes": len(ports),
            "primaries": len(primaries),
            "offered": offered,
            "accepted": offered["accepted"],
            "planned_s": planned_s,
            "sustained_per_s": offered["accepted"] / planned_s,
            "cpu_s": cpu,
            "service_us_per_event": {name: seconds * 1e6 / accepted for name, seconds in cpu.items()},
            "redis_cpu_s_all_nodes": sum(redis_cpu.values()),
            "redis_us_per_event_all_nodes": sum(redis_cpu.values()) * 1e6 / accepted,
            "redis_us_per_event_primaries": sum(redis_cpu[p] for p in primaries) * 1e6 / accepted,
            "redis_busiest_primary_share": max(redis_cpu[p] for p in primaries)
            / max(1e-9, sum(redis_cpu[p] for p in primaries)),
            "redis_commands_per_event": commands / accepted,
            **stored,
            "idle_core_share": idle,
            # Calls per command over the whole run (setup and idle included), busiest first.
            "commandstats": {
                name: {"calls": calls, "usec": usec}
                for name, (calls, usec) in sorted(commandstats.items(), key=lambda kv: -kv[1][1])[:25]
            },
        }
    finally:
        children.stop_all()
        # The Redis data (AOF, nodes.conf) is no part of the report, and a run leaves gigabytes of it.
        shutil.rmtree(os.path.join(children.out, "cluster") if mode == "cluster" else redis_dir, ignore_errors=True)


def model(r):
    """docs/operating/capacity.md's model from one mode's measured per-event costs: Redis primaries kept at half a
    core each (headroom for failover, resharding and bursts), replicas one per primary, worker cores at
    70 % busy, for a sustained event rate; 1 billion impressions a day as its average rate times a
    peak factor of 3."""
    rates = {"1e4/s": 1e4, "1e5/s": 1e5, "1e6/s": 1e6, "1e9 impressions/day (peak 3x)": 1e9 / 86400 * 3}
    primary_us = r["redis_us_per_event_primaries"]
    replica_us = max(0.0, r["redis_us_per_event_all_nodes"] - primary_us) / max(1, r["primaries"])
    worker_us = sum(r["service_us_per_event"].values())
    return {
        name: {
            "primaries": rate * primary_us / 1e6 / 0.5,
            "replica_cores": rate * replica_us * r["primaries"] / 1e6,
            "worker_cores": rate * worker_us / 1e6 / 0.7,
        }
        for name, rate in rates.items()
    }


def summary_lines(results):
    """What is printed: a line per mode measured, then a line per rate of the model."""
    lines = []
    for mode, r in results.items():
        if mode == "model":
            for name, need in r.items():
                lines.append(
                    f"model {name}: {need['primaries']:.1f} primaries, {need['replica_cores']:.1f} replica cores, {need['worker_cores']:.1f} worker cores"
                )
            continue
        lines.append(
            f"{mode}: {r['sustained_per_s']:,.0f} events/s sustained ({r['accepted']:,} accepted, {r['offered'].get('shed', 0):,} shed, "
            f"at {r['offered']['offeredPerSecond']:,}/s offered in batches of {r['offered'].get('batch', 1)}); "
            f"Redis {r['redis_us_per_event_all_nodes']:.0f} µs/event on all {r['nodes']} nodes, {r['redis_us_per_event_primaries']:.0f} on the "
            f"{r['primaries']} primaries (busiest {r['redis_busiest_primary_share']:.0%}), {r['redis_commands_per_event']:.1f} commands/event; "
            "idle: " + ", ".join(f"{k} {v:.1%}" for k, v in r["idle_core_share"].items())
        )
    return lines


def report_section(results, rate, batch):
    """The scale section of the run's report (bench.py wrote the rest)."""
    lines = [
        "",
        "## Scale: one Redis and a 3-primary Redis Cluster",
        "",
        f"All five services, the same campaign offered to each ({rate} events/s in batches of {batch}: the capacity the run "
        "found for one Redis; events/s until every accepted conversion is planned). On this "
        "machine the cluster's six redis-servers share its cores with the services and the load generator, so its "
        "events/s measures overhead, not capacity; the per-event costs are what docs/operating/capacity.md scales.",
        "",
        "| | events/s | Redis µs/event (all nodes) | Redis µs/event (primaries) | busiest primary | commands/event | "
        "service µs/event | idle, share of a core |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for mode in ("single", "cluster"):
        if mode not in results:
            continue
        r = results[mode]
        lines.append(
            f"| {mode} ({r['primaries']} primar{'y' if r['primaries'] == 1 else 'ies'}, {r['nodes']} node{'s' if r['nodes'] > 1 else ''}) "
            f"| {r['sustained_per_s']:,.0f} | {r['redis_us_per_event_all_nodes']:.0f} | {r['redis_us_per_event_primaries']:.0f} "
            f"| {r['redis_busiest_primary_share']:.0%} | {r['redis_commands_per_event']:.1f} | "
            + ", ".join(f"{k} {v:.0f}" for k, v in r["service_us_per_event"].items())
            + " | "
            + ", ".join(f"{k} {v:.1%}" for k, v in r["idle_core_share"].items())
            + " |"
        )
    single = results.get("single", {})
    if "aof_bytes_per_event" in single:
        lines += [
            "",
            f"Redis bytes per event (one Redis, the campaign): {single['stream_bytes_per_event']:,.0f} in the streams' memory, "
            f"{single['aof_bytes_per_event']:,.0f} appended to the append-only file.",
        ]
    if "model" in results:
        lines += ["", "Model (docs/operating/capacity.md): primaries at half a core, worker cores at 70 %:", ""]
        lines += [
            f"- {name}: {need['primaries']:.1f} primaries, {need['replica_cores']:.1f} replica cores, "
            f"{need['worker_cores']:.1f} worker cores"
            for name, need in results["model"].items()
        ]
    return lines


def main():
    bin_dir, out = sys.argv[1], os.path.abspath(sys.argv[2])
    use_binaries(bin_dir)
    os.makedirs(out, exist_ok=True)
    rate, batch = campaign_offer(out)
    modes = os.environ.get("BENCH_SCALE_MODES", "single,cluster").split(",")
    results = {mode: run(bin_dir, out, mode, rate, batch) for mode in modes}
    if "cluster" in results:
        results["model"] = model(results["cluster"])
    with open(os.path.join(out, "scale.json"), "w") as f:
        json.dump(results, f, indent=2)
    print("\n".join(summary_lines(results)))
    with open(os.path.join(out, "report.md"), "a") as f:
        f.write("\n".join(report_section(results, rate, batch)) + "\n")


if __name__ == "__main__":
    main()
