"""The benchmark's capacity search (scripts/bench.py uses it): offers load in steps with `attribution
load`, judges each step, and finds the highest offered rate the running services sustain.

A step offers a rate (events/s, in requests of `batch` events) for a few seconds, starting from a
drained pipeline (its consumer groups and queues, and what else the caller names: the all-five ramp
also waits for the window timers, held postbacks and deliveries of the steps before, so that no step
inherits another's delayed work), after a warm-up at the same rate when the caller asks for one (the
all-five ramp, whose window timers and postbacks fall due seconds after each event: judged after the
warm-up, a step carries the delayed work of its own rate, as a pipeline running at that rate does),
and is good when
  - accepted ≥ 99 % of the events offered,
  - the accepted requests' p99 latency ≤ 50 ms (counted from when each request was due), and
  - the pipeline keeps up: the backlog of the stages' consumer groups (lag + pending, summed over the
    partitions, sampled several times a second while the offer runs) does not grow by more than 5 % of
    the offered rate per second (a least-squares slope), and is at most a second's worth at the end.
The ramp starts low and multiplies the rate by 1.5 until a step is bad, then bisects (geometrically)
between the last good and the first bad rate. A bad step is run once more before it counts as bad
(a single stall on shared cores is not the capacity). Each step also records CPU per event per process (from
/proc, from the step's start until the pipeline has drained), Redis CPU and commands per event (and
the CPU of the append-only file rewrites that ended meanwhile), and
the entries added to the pipeline's streams, so that nothing accepted is lost unnoticed.

Environment: BENCH_RAMP_STEP_SECONDS (5), BENCH_RAMP_FACTOR (1.5), BENCH_RAMP_REFINE (3 bisections),
BENCH_RAMP_START (250 events/s), BENCH_RAMP_MAX_STEPS (12 rising steps), BENCH_RAMP_RETRIES (1)."""

import json
import math
import os
import re
import subprocess
import threading
import time

from harness import RedisConnection, cpu_seconds, entries_added, group_backlog, partitioned, redis_info_cpu_seconds

STEP_SECONDS = float(os.environ.get("BENCH_RAMP_STEP_SECONDS", "5"))
FACTOR = float(os.environ.get("BENCH_RAMP_FACTOR", "1.5"))
REFINE = int(os.environ.get("BENCH_RAMP_REFINE", "3"))
START = int(os.environ.get("BENCH_RAMP_START", "250"))
MAX_STEPS = int(os.environ.get("BENCH_RAMP_MAX_STEPS", "12"))
RETRIES = int(os.environ.get("BENCH_RAMP_RETRIES", "1"))
ACCEPTED_FRACTION, P99_MS, GROWTH_FRACTION = 0.99, 50.0, 0.05


class Bench:
    """What a step needs: the load tool's command line, the processes to account CPU to, the consumer
    groups whose backlog must not grow, the streams whose added entries are counted, and the delayed
    queues (sorted sets) that must be empty for the pipeline to count as drained."""

    def __init__(
        self,
        bin_dir,
        redis_port,
        ingest,
        network,
        key_file,
        processes,
        groups,
        streams,
        queues=(),
        app_key=None,
        drain_groups=(),
        drain_queues=(),
        warmup=0.0,
    ):
        self.bin_dir, self.redis_port, self.ingest, self.network, self.key_file = (
            bin_dir,
            redis_port,
            ingest,
            network,
            key_file,
        )
        self.processes, self.groups, self.streams, self.queues, self.app_key = (
            processes,
            groups,
            streams,
            queues,
            app_key,
        )
        # Empty before a step starts, not judged during it: work due later (timers, held postbacks).
        self.drain_groups, self.drain_queues, self.warmup = drain_groups, drain_queues, warmup
        self.connection = RedisConnection(redis_port)

    def backlog(self, connection=None, groups=None, queues=None):
        connection = connection or self.connection
        groups, queues = self.groups if groups is None else groups, self.queues if queues is None else queues
        total = sum(group_backlog(connection, groups).values()) if groups else 0
        if queues:
            names = [name + ":due" for queue in queues for name in partitioned(queue)]
            total += sum(r for r in connection.pipeline([("ZCARD", name) for name in names]) if isinstance(r, int))
        return total

    def redis_counters(self):
        """Redis's own CPU seconds, its commands, and the CPU seconds of its finished children (the
        rewrites of its append-only file: another core's work, counted when a rewrite ends)."""
        cpu, stats = self.connection.pipeline([("INFO", "cpu"), ("INFO", "stats")])
        return (
            redis_info_cpu_seconds(cpu),
            int(re.search(r"total_commands_processed:(\d+)", stats).group(1)),
            redis_info_cpu_seconds(cpu, children=True),
        )

    def drain(self, seconds=120):
        """Until nothing waits in the pipeline; how long that took (None if it did not drain in time)."""
        started = time.time()
        while time.time() - started < seconds:
            if self.backlog() == 0 and self.backlog(groups=self.drain_groups, queues=self.drain_queues) == 0:
                return time.time() - started
            time.sleep(0.05)
        return None

    def load(self, rate, seconds, batch):
        """Runs `attribution-bench load` to the end; its figures and the backlog samples (time, backlog) taken
        meanwhile."""
        command = [
            f"{self.bin_dir}/attribution-bench",
            "load",
            "--ingest-url",
            self.ingest,
            "--rate",
            str(rate),
            "--duration",
            str(seconds),
            "--network",
            self.network,
            "--key-file",
            self.key_file,
            "--batch",
            str(batch),
        ]
        if self.app_key:
            command += ["--app-key", self.app_key]
        samples, done = [], threading.Event()
        sampler_connection = RedisConnection(self.redis_port)

        def sample():  # on its own connection: the main thread's is idle meanwhile, but keep them apart
            while not done.is_set():
                samples.append((time.time(), self.backlog(sampler_connection)))
                done.wait(0.2)

        thread = threading.Thread(target=sample, daemon=True)
        thread.start()
        try:
            output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        finally:
            ended = time.time()
            done.set()
            thread.join()
            sampler_connection.close()
        return json.loads(output.strip().splitlines()[-1]), samples, ended

    def step(self, rate, batch, seconds=STEP_SECONDS):
        """One step from a drained pipeline: offer, judge, drain, account."""
        self.drain()
        cpu_before = {name: cpu_seconds(p.pid) for name, p in self.processes.items()}
        redis_cpu_before, commands_before, rewriting_before = self.redis_counters()
        added_before = {stream: entries_added(self.connection, stream) for stream in self.streams}
        backlog_before = self.backlog()
        figures, samples, ended = self.load(rate, seconds + self.warmup, batch)
        backlog_after = self.backlog()
        drain_s = self.drain()
        cpu = {name: cpu_seconds(p.pid) - cpu_before[name] for name, p in self.processes.items()}
        redis_cpu_after, commands_after, rewriting_after = self.redis_counters()
        added = {stream: entries_added(self.connection, stream) - added_before[stream] for stream in self.streams}
        # The samples while requests went out (the tool signs first): from the first request's due time
        # (the end minus the tool's own run time) to the end, less the warm-up (at least half a second).
        window = [(t, b) for t, b in samples if ended - figures["seconds"] + max(0.5, self.warmup) <= t <= ended]
        growth = slope(window)
        accepted, offered = figures["accepted"], max(1, figures["sent"])
        why_not = shortfalls(figures, rate, growth, backlog_before, backlog_after, drain_s)
        per_event = max(1, accepted)
        return {
            "rate": rate,
            "batch": batch,
            "seconds": seconds,
            "offered": figures["sent"],
            "accepted": accepted,
            "shed": figures["shed"],
            "failed": figures["failed"],
            "accepted_fraction": accepted / offered,
            "shed_fraction": figures["shed"] / offered,
            "goodput_per_s": accepted / max(1e-9, figures["seconds"]),
            "accepted_p99_ms": figures["acceptedP99Milliseconds"],
            "p99_ms": figures["p99Milliseconds"],
            "backlog_before": backlog_before,
            "backlog_after": backlog_after,
            "backlog_growth_per_s": growth,
            "backlog_samples": len(window),
            "drain_s": drain_s,
            "good": not why_not,
            "why_not": why_not,
            "cpu_s": cpu,
            "cpu_us_per_event": {name: s * 1e6 / per_event for name, s in cpu.items()},
            "redis_cpu_s": redis_cpu_after - redis_cpu_before,
            "redis_us_per_event": (redis_cpu_after - redis_cpu_before) * 1e6 / per_event,
            "redis_commands_per_event": (commands_after - commands_before) / per_event,
            "redis_rewrite_us_per_event": (rewriting_after - rewriting_before) * 1e6 / per_event,
            "added": added,
            "figures": figures,
        }

    def ramp(self, batch, start=START, log=print):
        """The capacity search; {"batch", "capacity_per_s", "at_capacity" (the good step at that rate),
        "steps" (in the order run)}."""
        steps = []

        def run(rate, attempt=1):
            record = self.step(rate, batch)
            record["attempt"] = attempt
            steps.append(record)
            log(
                f"  ramp batch {batch}: {rate:,}/s offered → {record['accepted']:,} accepted ({record['accepted_fraction']:.1%}), "
                f"accepted p99 {record['accepted_p99_ms']:.1f} ms (by kind: "
                + ", ".join(
                    f"{k} {v:.0f}" for k, v in record["figures"].get("acceptedP99MillisecondsByKind", {}).items()
                )
                + f"; sent late p99 {record['figures'].get('lateP99Milliseconds', 0):.1f} ms), backlog {record['backlog_before']}→{record['backlog_after']} "
                f"({record['backlog_growth_per_s']:+,.0f}/s): "
                + ("good" if record["good"] else "; ".join(record["why_not"]))
            )
            # A bad step is run again before the search believes it: one stall (an AOF rewrite's fork, a
            # burst of due postbacks) on these shared cores can fail a step far below capacity.
            if not record["good"] and attempt <= RETRIES:
                return run(rate, attempt + 1)
            return record["good"]

        good, bad = search(run, start)
        at_capacity = max((s for s in steps if s["good"]), key=lambda s: s["rate"], default=None)
        return {
            "batch": batch,
            "capacity_per_s": good or 0,
            "first_bad_per_s": bad,
            "at_capacity": at_capacity,
            "steps": steps,
            "criteria": {
                "retries_of_a_bad_step": RETRIES,
                "accepted_fraction": ACCEPTED_FRACTION,
                "accepted_p99_ms": P99_MS,
                "backlog_growth_fraction_of_rate": GROWTH_FRACTION,
                "step_seconds": STEP_SECONDS,
                "factor": FACTOR,
                "warmup_seconds": self.warmup,
            },
        }


def shortfalls(figures, rate, growth, backlog_before, backlog_after, drain_s):
    """Why a step offering `rate` was bad, in words (empty when it was good): `figures` is the load
    tool's last line, `growth` the backlog's slope while it offered, `drain_s` None if the pipeline did
    not drain afterwards."""
    accepted, offered = figures["accepted"], max(1, figures["sent"])
    why_not = []
    if accepted < ACCEPTED_FRACTION * offered:
        why_not.append(f"accepted {accepted / offered:.1%} of offered")
    if figures["acceptedP99Milliseconds"] > P99_MS or figures["acceptedRequests"] == 0:
        why_not.append(f"accepted p99 {figures['acceptedP99Milliseconds']:.1f} ms")
    if growth > GROWTH_FRACTION * rate or backlog_after > backlog_before + max(500, rate):
        why_not.append(f"backlog grew {growth:,.0f}/s to {backlog_after:,}")
    if drain_s is None:
        why_not.append("did not drain")
    return why_not


def search(run, start=START, factor=FACTOR, max_steps=MAX_STEPS, refine=REFINE):
    """The rates the search settles on, (highest good, lowest bad; either None if no step was): `run`
    offers a rate and says whether it was good. Up by `factor` from `start` until a step is bad (down
    by it while the first steps are bad, giving up four steps down), then `refine` geometric
    bisections between the two."""
    good, bad, rate, down = None, None, max(1, int(start)), 0
    for _ in range(max_steps):
        if run(rate):
            good = rate
            if bad is not None:
                break
            rate = int(rate * factor)
        else:
            bad = rate
            down += 1
            if good is not None or down > 3:  # nothing good four steps down: report no capacity
                break
            rate = max(1, int(rate / factor))  # the first step was already too much: step down
    for _ in range(refine if good and bad else 0):
        middle = int(round((good * bad) ** 0.5))
        if middle in (good, bad):
            break
        if run(middle):
            good = middle
        else:
            bad = middle
    return good, bad


def slope(samples):
    """Least-squares slope of (time, value) samples; 0 with fewer than three."""
    if len(samples) < 3:
        return 0.0
    n = len(samples)
    mean_t, mean_v = sum(t for t, _ in samples) / n, sum(v for _, v in samples) / n
    variance = sum((t - mean_t) ** 2 for t, _ in samples)
    return 0.0 if variance == 0 else sum((t - mean_t) * (v - mean_v) for t, v in samples) / variance


def ramp_chart(panels, width=640):
    """SVG rows, one per ramp: offered vs accepted events/s per step (the diagonal is "all accepted"),
    and accepted p99 per step on a log scale with the 50 ms bound. `panels`: (title, ramp, overload
    steps)."""
    rows, height, top = [], 210, 0
    for title, ramp, overload in panels:
        steps = ramp["steps"] + list(overload)
        if not steps:
            continue
        top_rate = max(max(s["rate"] for s in steps), max(s["goodput_per_s"] for s in steps)) * 1.05
        x0, plot_w, plot_h, y0 = 60, 240, 150, top + 30
        rows.append(
            f'<text x="10" y="{top + 18}" font-weight="bold">{title}: capacity {ramp["capacity_per_s"]:,} events/s</text>'
        )
        for offset, label in ((0, "accepted events/s vs offered"), (320, "accepted p99 (ms, log) vs offered")):
            rows.append(
                f'<rect x="{x0 + offset}" y="{y0}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#999"/>'
            )
            rows.append(f'<text x="{x0 + offset}" y="{y0 + plot_h + 28}" font-size="11">{label}</text>')
            rows.append(f'<text x="{x0 + offset}" y="{y0 + plot_h + 13}" font-size="10">0</text>')
            rows.append(
                f'<text x="{x0 + offset + plot_w - 40}" y="{y0 + plot_h + 13}" font-size="10">{top_rate:,.0f}</text>'
            )

        # This panel's geometry, bound now (the helpers are called only within this iteration).
        def x(rate, offset=0, x0=x0, top_rate=top_rate, plot_w=plot_w):
            return x0 + offset + rate / top_rate * plot_w

        def y_rate(value, y0=y0, plot_h=plot_h, top_rate=top_rate):
            return y0 + plot_h - value / top_rate * plot_h

        def y_ms(ms, y0=y0, plot_h=plot_h):  # 0.1 ms … 10 s, log
            return y0 + plot_h - (math.log10(max(0.1, min(10000, ms))) + 1) / 5 * plot_h

        rows.append(
            f'<line x1="{x(0)}" y1="{y_rate(0)}" x2="{x(top_rate)}" y2="{y_rate(top_rate)}" stroke="#bbb" stroke-dasharray="4 3"/>'
        )
        rows.append(f'<text x="{x0 - 4}" y="{y0 + 10}" font-size="10" text-anchor="end">{top_rate:,.0f}</text>')
        rows.append(
            f'<line x1="{x(0, 320)}" y1="{y_ms(50)}" x2="{x(top_rate, 320)}" y2="{y_ms(50)}" stroke="#d04a4a" stroke-dasharray="4 3"/>'
        )
        for ms in (1, 10, 100, 1000):
            rows.append(f'<text x="{x0 + 316}" y="{y_ms(ms) + 4}" font-size="10" text-anchor="end">{ms}</text>')
        if ramp["capacity_per_s"]:
            for offset in (0, 320):
                rows.append(
                    f'<line x1="{x(ramp["capacity_per_s"], offset)}" y1="{y0}" x2="{x(ramp["capacity_per_s"], offset)}" '
                    f'y2="{y0 + plot_h}" stroke="#4a7bd0" stroke-dasharray="2 2"/>'
                )
        for s in steps:
            color = "#2e8b57" if s.get("good") else "#d04a4a"
            shape = "rect" if s in overload else "circle"
            for offset, y in ((0, y_rate(s["goodput_per_s"])), (320, y_ms(s["accepted_p99_ms"]))):
                if shape == "circle":
                    rows.append(f'<circle cx="{x(s["rate"], offset):.1f}" cy="{y:.1f}" r="3.5" fill="{color}"/>')
                else:
                    rows.append(
                        f'<rect x="{x(s["rate"], offset) - 4:.1f}" y="{y - 4:.1f}" width="8" height="8" fill="#e0a030"/>'
                    )
        top += height
    legend = (
        f'<text x="10" y="{top + 14}" font-size="11">circles: ramp steps (green good, red bad); squares: offers at 2× and 5× '
        "capacity; dashed: all accepted, the 50 ms bound, the capacity found</text>"
    )
    return rows + [legend], top + 24
