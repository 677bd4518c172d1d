"""The run in order: the pipeline, the forged-network flood, valid traffic, then each attack family as
a phase (schemathesis first and again authenticated, extreme values last), the invariants, the report."""

import argparse
import collections
import os
import threading
import time

import hostile
from harness import Processes, group_done, rss_mib, use_binaries
from hostile import access, events, exhaustion, invariants, launch, report, streams
from hostile.flood import forged_network_flood
from hostile.fuzz import fuzz
from hostile.monitor import MemoryMonitor, Supervisor
from hostile.progress import log
from hostile.state import Run
from hostile.traffic import ValidTraffic


def parse_arguments(argv=None):
    """The command line (`argv`, else the process's)."""
    parser = argparse.ArgumentParser(
        prog="python3 -m hostile", description=hostile.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "bin", help="directory holding ingest, verifier, attribution-winner, scheduler, dispatcher, attribution"
    )
    parser.add_argument("out", help="run directory (logs, Redis, reports)")
    parser.add_argument(
        "--examples", type=int, default=40, help="schemathesis examples per operation and phase (default 40)"
    )
    parser.add_argument(
        "--fuzz-seconds", type=int, default=75, help="time budget of each schemathesis run (default 75)"
    )
    parser.add_argument("--idle", type=int, default=800, help="concurrent idle connections to hold (default 800)")
    parser.add_argument(
        "--hold", type=float, default=12.0, help="seconds to hold slow and unfinished requests (default 12)"
    )
    parser.add_argument(
        "--rate", type=float, default=8.0, help="valid impressions (plus as many conversions) per second (default 8)"
    )
    parser.add_argument("--skip-fuzz", action="store_true", help="skip schemathesis (raw abuse only)")
    parser.add_argument("--seed", type=int, default=10, help="schemathesis seed (default 10)")
    return parser.parse_args(argv)


def main(argv=None):
    """Runs everything; 1 on any violation. The services are stopped however it ends."""
    options = parse_arguments(argv)
    out = os.path.abspath(options.out)
    use_binaries(options.bin)
    os.makedirs(os.path.join(out, "logs"), exist_ok=True)
    processes = Processes(os.path.join(out, "logs"))
    try:
        return attack(options, out, processes)
    finally:
        processes.stop_all()


def attack(options, out, processes):
    """The pipeline, the flood, valid traffic and every phase; then the verdict, written as the report."""
    started, started_at = time.time(), time.strftime("%Y-%m-%d %H:%M:%S")
    bin_dir = launch.copy_binaries(options.bin, out)
    target, ports = launch.start(processes, bin_dir, out)
    run = Run(options, out, target, processes, ports)
    log(
        f"redis :{target.redis_port}, ingest :{target.ingest_port}, receiver :{target.receiver_port}; logs in {out}/logs"
    )
    connection = streams.connect(target.redis_port)

    ingest_pid = run.pid("ingest")
    rss_before = rss_mib(ingest_pid)
    monitor = MemoryMonitor(ingest_pid)
    monitor.start()
    flood, flood_violations = forged_network_flood(run, connection)
    traffic = ValidTraffic(target, options.rate)
    traffic.start()
    log(f"valid traffic at {options.rate}/s; ingest RSS {rss_before:.1f} MiB")
    supervisor = Supervisor(run, launch.SERVICES)
    supervisor.start()

    phases, fuzz_results, violations = run_phases(run)

    # Let valid traffic run a little longer after the abuse: it must still flow.
    time.sleep(3)
    traffic.stop.set()
    traffic.join()
    log(f"valid traffic stopped: {dict(traffic.sent)} sent; waiting for the verifier to drain `events`")
    run.phase = "drain"
    # A stage restarted after a crash claims what its predecessor left pending after CLAIM_IDLE_MS.
    deadline = time.time() + 120
    while time.time() < deadline and not group_done(connection, "events", "verifier"):
        time.sleep(0.2)
    time.sleep(1)
    supervisor.stop.set()
    supervisor.join()

    sections = judge(run, connection, traffic, supervisor.crashes, fuzz_results, violations)
    rss_after = rss_mib(ingest_pid)
    monitor.stop.set()
    sections["violations"] += invariants.memory(rss_before, rss_after) + flood_violations
    sections.update(
        {
            "started": started_at,
            "options": vars(options),
            "seconds": round(time.time() - started, 1),
            "phases": phases,
            "ingest_rss_mib": {
                "before": round(rss_before, 1),
                "peak": round(monitor.peak_rss, 1),
                "after": round(rss_after, 1),
            },
            "ingest_peak_fds": monitor.peak_fds,
            "forged_network_flood": flood,
        }
    )
    document, markdown = report.write(out, sections, run.seen.answers)
    print(markdown)
    return 1 if document["violations"] else 0


def run_phases(run):
    """Every attack family in turn; returns (phases: seconds and result of each, schemathesis's figures,
    the violations of phases that could not complete)."""
    phases, fuzz_results, violations = {}, [], []

    def phase(name, function):
        """Runs one category; an exception (say, a service that died under it) is a violation, and
        the run goes on so that every category is still tried."""
        t = time.time()
        run.phase = name
        log(f"{name} ...")
        try:
            result = function(run)
        except Exception as error:
            result = {"error": repr(error)}
            violations.append(f"phase {name} could not complete: {error!r}")
        phases[name] = {"seconds": round(time.time() - t, 1)}
        if result is not None:
            phases[name]["result"] = result
        log(f"{name}: {run.seen.inputs.get(name, 0)} inputs, {phases[name]['seconds']} s")

    def fuzz_phase(label, auth):
        def fuzz_listeners(run):
            for listener in ("public", "admin"):
                result = fuzz(run, label, auth, listener)
                fuzz_results.append(result)
                log(
                    f"schemathesis {label} ({listener} listener): {result['requests']} requests, "
                    f"{len(result['failures'])} distinct failures"
                )

        return fuzz_listeners

    if not run.options.skip_fuzz:
        phase("fuzz-anonymous", fuzz_phase("anonymous", False))
    phase("oversized", exhaustion.oversized_bodies)
    phase("postback-url", access.postback_urls)
    phase("replay", events.replays)
    phase("slow+idle", slow_and_idle)
    if not run.options.skip_fuzz:
        phase("fuzz-authenticated", fuzz_phase("authenticated", True))
    # Last: the inputs most likely to take a stage down.
    phase("extreme-values", events.extreme_values)
    return phases, fuzz_results, violations


def judge(run, connection, traffic, crashes, fuzz_results, violations):
    """The invariants over what the streams hold now and what the run saw: the report's sections on
    them, its `violations` those so far (`violations`) and every one found here, in the report's order."""
    verified_entries = streams.envelopes(run.target.redis_port, "verified")
    rejected_entries = streams.envelopes(run.target.redis_port, "rejected")
    verified = {e["id"]: e for e in verified_entries}
    rejected = {
        e["body"].get("event-identifier"): e["body"] for e in rejected_entries if e.get("type") == "event.rejected"
    }
    violations = list(violations)
    health, found = invariants.services(run, crashes)
    violations += found
    dead_letters = invariants.dead_lettered(connection)
    valid, found = invariants.valid_traffic(traffic, verified, rejected, dead_letters)
    violations += found
    hostile_accounting, found = invariants.hostile_events(run, verified, rejected, dead_letters)
    violations += found
    unaccounted, found = invariants.unaccounted(run, traffic, verified)
    violations += found
    dead, found = invariants.dead_letter_counts(connection)
    violations += found
    log_errors = invariants.log_errors(run)
    violations += invariants.answers(run.seen, fuzz_results)
    seen = run.seen
    return {
        "inputs_per_category": dict(seen.inputs),
        "inputs_total": sum(seen.inputs.values()),
        "status_per_category": {k: dict(v) for k, v in seen.status.items()},
        "four_xx_by_reason": dict(sorted(seen.reasons.items())),
        "five_xx": len(seen.five_xx),
        "five_xx_answers": seen.five_xx[:50],
        "not_problem_json": seen.not_problem_json[:50],
        "crashes": len(crashes),
        "crash_list": crashes,
        "services": health,
        "schemathesis": fuzz_results,
        "schemathesis_requests": sum(r["requests"] for r in fuzz_results),
        "valid_traffic": valid,
        "hostile_accepted_by_ingest": len(seen.hostile_event_ids),
        "hostile_verdicts": dict(hostile_accounting),
        "verified_not_from_valid_traffic": dict(unaccounted),
        "streams": {
            "verified": len(verified_entries),
            "rejected": len(rejected_entries),
            "rejected_by_reason": dict(collections.Counter(r.get("reason") for r in rejected.values())),
            **dead,
        },
        "service_log_errors": log_errors,
        "unexpected_answers": seen.unexpected,
        "findings": seen.findings,
        "violations": violations,
    }


def slow_and_idle(run):
    """Slow and idle connections together, while valid traffic flows."""
    slow_result = {}
    slow_thread = threading.Thread(target=lambda: slow_result.update(exhaustion.slow_requests(run)))
    slow_thread.start()
    idle = exhaustion.idle_connections(run)
    slow_thread.join()
    return {
        "idle": idle,
        "slow": {k: [None if c is None else round(c, 1) for c in v] for k, v in slow_result.items()},
    }
