"""The run's verdict once the attacks are over: every service alive and healthy, every valid event
verified, every hostile one refused with its reason, nothing in `verified` nobody sent, no 5xx, every
4xx problem JSON. Each check returns its figures and its violations, in the order the report lists them."""

import collections
import os
import re

from harness import rss_mib
from hostile import streams
from hostile.launch import SERVICES

DEAD_LETTERS = ("verifier:dead", "attribution-winner:dead", "scheduler:dead", "dispatcher:dead")
VERIFIED_BY_APP_KEY = ("conversion.verified", "update.verified", "activity.verified")
EVENT_ID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def services(run, crashes):
    """Each service alive, answering /health, and how often it crashed; every crash is a violation."""
    health, violations = {}, []
    for name in SERVICES:
        process = run.processes.running[name]
        alive = process.poll() is None
        ok = False
        try:
            ok = alive and run.http("GET", "/health", timeout=5, port=run.ports[name])[0] == 200
        except OSError:
            pass
        health[name] = {
            "alive": alive,
            "health": ok,
            "exit_code": process.poll(),
            "crashes": sum(1 for c in crashes if c["service"] == name),
            "rss_mib": round(rss_mib(process.pid), 1),
        }
        if not ok:
            state = "not answering /health" if alive else f"dead (exit {process.poll()})"
            violations.append(f"{name} is {state} at the end")
    for c in crashes:
        violations.append(
            f"{c['service']} crashed (exit {c['exit_code']}) during {c['phase']}: {c['site']} (log {c['log']})"
        )
    return health, violations


def dead_lettered(connection):
    """What the stages dead-lettered, {event id: dead-letter stream}: it explains a missing verdict."""
    found = {}
    for stream in DEAD_LETTERS:
        for _entry_id, fields in streams.entries(connection, stream):
            for event in re.findall(EVENT_ID, b" ".join(fields).decode("utf-8", "replace")):
                found.setdefault(event, stream)
    return found


def valid_traffic(traffic, verified, rejected, dead_letters):
    """Every valid request acknowledged, every acknowledged event verified."""
    violations = []
    missing = [i for i in traffic.ids if i not in verified]
    refused = {i: rejected[i].get("reason") for i in missing if i in rejected}
    refused.update({i: "dead-lettered in " + dead_letters[i] for i in missing if i in dead_letters})
    figures = {
        "sent": dict(traffic.sent),
        "accepted": dict(traffic.accepted),
        "verified": len(traffic.ids) - len(missing),
        "failures": traffic.failures[:20],
        "refused_by_verifier": dict(collections.Counter(refused.values())),
        "latency_ms": {"p50": traffic.latency_ms(0.5), "p99": traffic.latency_ms(0.99), "max": traffic.latency_ms(1.0)},
    }
    if traffic.failures:
        violations.append(
            f"{len(traffic.failures)} valid requests were not acknowledged with 202 (first: {traffic.failures[0]})"
        )
    if missing:
        violations.append(
            f"{len(missing)} acknowledged valid events did not reach `verified` ({len(refused)} refused: "
            f"{dict(collections.Counter(refused.values()))})"
        )
    return figures, violations


def of_fuzz_app(entry, fuzz_app):
    """Whether a `verified` entry is an app-key-authenticated event of the fuzzer's own app: the app key
    is its authentication, so it is legitimately verified."""
    body = entry.get("body") or {}
    item = body.get("advertised-item-identifier") or (body.get("conversion") or {}).get("advertised-item-identifier")
    return entry.get("type") in VERIFIED_BY_APP_KEY and item == fuzz_app


def requested_with_admin_token(entry, case):
    """Whether a `verified` entry is a test-postback request the authenticated fuzzer made on the admin
    listener: the admin token is its authentication, and the request is meant to pass every stage."""
    return entry.get("type") == "test-postbacks.requested" and case.startswith("fuzz-authenticated-admin:")


def hostile_events(run, verified, rejected, dead_letters):
    """What ingest accepted from hostile requests must be refused by the verifier, with the expected
    reason where it is known. Returns ({verdict: count}, violations)."""
    seen, violations = run.seen, []
    accounting = collections.Counter()
    for event in seen.allowed_verified:
        seen.hostile_event_ids.pop(event, None)
    for event, case in seen.hostile_event_ids.items():
        if event in rejected:
            accounting[f"rejected: {rejected[event].get('reason')}"] += 1
        elif event in verified:
            entry = verified[event]
            if of_fuzz_app(entry, run.target.fuzz_app):
                accounting[f"verified: {entry['type']} authenticated by the fuzzer's app key"] += 1
            elif requested_with_admin_token(entry, case):
                accounting[f"verified: {entry['type']} requested with the admin token"] += 1
            else:
                accounting["verified: VIOLATION"] += 1
                violations.append(f"hostile event {event} ({case}) reached `verified` as {entry.get('type')}")
        elif event in dead_letters:
            accounting[f"dead-lettered in {dead_letters[event]}"] += 1
            violations.append(
                f"hostile event {event} ({case}) was dead-lettered in {dead_letters[event]}, not refused with a reason"
            )
        else:
            accounting["no verdict"] += 1
            violations.append(f"hostile event {event} ({case}) accepted by ingest but neither verified nor rejected")
    wrong_reasons = []
    for event, (case, reason) in seen.expected_verdicts.items():
        got = rejected.get(event, {}).get("reason")
        if got != reason:
            wrong_reasons.append({"case": case, "expected": reason, "got": got})
    if wrong_reasons:
        violations.append(
            f"{len(wrong_reasons)} hostile events refused with another reason than expected: {wrong_reasons[:5]}"
        )
    return accounting, violations


def unaccounted(run, traffic, verified):
    """Nothing in `verified` that nobody can account for (the fuzzer's 202s are all in its HAR)."""
    seen, violations = run.seen, []
    known = set(traffic.ids) | set(seen.hostile_event_ids) | set(seen.allowed_verified)
    found = collections.Counter()
    for event, entry in verified.items():
        if event in known:
            continue
        if of_fuzz_app(entry, run.target.fuzz_app):
            found[f"{entry['type']} of the fuzzer's app (app key)"] += 1
        else:
            found[f"{entry.get('type')} UNACCOUNTED"] += 1
            violations.append(f"`verified` holds {entry.get('type')} {event} that no valid request produced")
    return found, violations


def dead_letter_counts(connection):
    """Messages in each dead-letter stream: any one is a message that broke a stage."""
    dead = {s: streams.length(connection, s) for s in DEAD_LETTERS}
    return dead, [f"{n} messages in {s}: a message broke a stage" for s, n in dead.items() if n]


def answers(seen, fuzz_results):
    """5xx and problem JSON, from our clients and schemathesis; its hard check failures; every answer
    that differed from what the attack expected."""
    violations = []
    if seen.five_xx:
        violations.append(f"{len(seen.five_xx)} answers were 5xx (first: {seen.five_xx[0]})")
    if seen.not_problem_json:
        violations.append(
            f"{len(seen.not_problem_json)} 4xx answers were not problem JSON (first: {seen.not_problem_json[0]})"
        )
    for failure in (f for r in fuzz_results for f in r["failures"] if f["hard"]):
        violations.append(f"schemathesis {failure['check']} on {failure['operation']}: {failure['title']}")
    for u in seen.unexpected:
        violations.append(
            f"{u['category']} / {u['case']}: expected {u['expected']}, got {u['got']} {u.get('reason') or ''}".strip()
        )
    return violations


def log_errors(run):
    """The error lines of each service's log (the first ten), for the report."""
    found = {}
    for name in SERVICES:
        with open(os.path.join(run.processes.out, name + ".log"), errors="replace") as f:
            text = f.read()
        errors = [
            line[:400]
            for line in text.splitlines()
            if re.search(r"\s(error|critical)\s", line) or "Fatal error" in line or "request failed" in line
        ]
        if errors:
            found[name] = errors[:10]
    return found


def memory(rss_before, rss_after):
    """Whether ingest's memory blew up: more than 4x its starting size and 256 MiB more. A 16 MiB body
    refused at 64 KiB should leave no trace at all."""
    if rss_after > max(4 * rss_before, rss_before + 256):
        return [f"ingest RSS grew from {rss_before:.0f} MiB to {rss_after:.0f} MiB"]
    return []
