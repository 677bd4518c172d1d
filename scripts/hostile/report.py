"""The run's report: report.json (every figure), answers.jsonl (every answer the run's own clients
got) and report.md (what a reader needs: inputs, invariants, failures, findings, violations)."""

import json
import os

# report.json's sections, in its order.
SECTIONS = (
    "started",
    "options",
    "seconds",
    "inputs_per_category",
    "inputs_total",
    "status_per_category",
    "four_xx_by_reason",
    "five_xx",
    "five_xx_answers",
    "not_problem_json",
    "crashes",
    "crash_list",
    "services",
    "schemathesis",
    "schemathesis_requests",
    "phases",
    "valid_traffic",
    "hostile_accepted_by_ingest",
    "hostile_verdicts",
    "verified_not_from_valid_traffic",
    "streams",
    "ingest_rss_mib",
    "ingest_peak_fds",
    "service_log_errors",
    "unexpected_answers",
    "findings",
    "forged_network_flood",
    "violations",
)


def write(out, sections, answers):
    """Writes the three files into the run directory from every one of `SECTIONS`; returns the report."""
    report = {name: sections[name] for name in SECTIONS}
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump(report, f, indent=2, default=str)
    with open(os.path.join(out, "answers.jsonl"), "w") as f:
        for answer in answers:
            f.write(json.dumps(answer) + "\n")
    markdown = render(report)
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(markdown)
    return report, markdown


def service_state(name, health):
    state = "up" if health["health"] else "DOWN"
    return f"{name}: {state}" + (f" (restarted after {health['crashes']} crashes)" if health["crashes"] else "")


def render(r):
    lines = [
        f"# Hostile input run ({r['started']}, {r['seconds']} s)",
        "",
        "## Inputs tried",
        "",
        "| category | inputs | answers |",
        "|---|---|---|",
    ]
    for category, n in sorted(r["inputs_per_category"].items()):
        answers = ", ".join(f"{s}: {c}" for s, c in sorted(r["status_per_category"].get(category, {}).items()))
        lines.append(f"| {category} | {n} | {answers} |")
    lines += [f"| **total** | **{r['inputs_total']}** | |", ""]
    for f in r["schemathesis"]:
        lines.append(
            f"- schemathesis {f['label']}: {f['requests']} requests in {f['seconds']} s (exit {f['exit_code']}), "
            f"{len(f['failures'])} distinct check failures ({sum(1 for x in f['failures'] if x['hard'])} server errors)"
        )
    lines += [
        "",
        "## Invariants",
        "",
        f"- 5xx answers: **{r['five_xx']}**",
        f"- crashes: **{r['crashes']}** ({', '.join(service_state(n, h) for n, h in r['services'].items())})",
        f"- 4xx answers that are not problem JSON: **{len(r['not_problem_json'])}**",
        f"- valid traffic: sent {r['valid_traffic']['sent']}, accepted {r['valid_traffic']['accepted']}, "
        f"verified {r['valid_traffic']['verified']}; latency p50 {r['valid_traffic']['latency_ms']['p50']} ms, "
        f"p99 {r['valid_traffic']['latency_ms']['p99']} ms, max {r['valid_traffic']['latency_ms']['max']} ms",
        f"- hostile events ingest accepted: {r['hostile_accepted_by_ingest']}; verdicts {r['hostile_verdicts']}",
        f"- `verified` entries not from valid traffic: {r['verified_not_from_valid_traffic'] or 'none'}",
        f"- streams: {r['streams']}",
        f"- forged-network flood (before valid traffic): {r['forged_network_flood']['requests']} anonymous impressions, "
        f"half naming unregistered networks, half the registered one with a stranger's key: "
        f"**{r['forged_network_flood']['bytes_per_request']} Redis bytes per request** (target ≤ 600), "
        f"{r['forged_network_flood']['new_key_count']} new keys, "
        f"**{r['forged_network_flood']['keys_naming_an_unregistered_id']} naming an unregistered id**",
        f"- ingest RSS: {r['ingest_rss_mib']['before']} MiB before, {r['ingest_rss_mib']['peak']} MiB peak, "
        f"{r['ingest_rss_mib']['after']} MiB after; peak open descriptors {r['ingest_peak_fds']}",
        "",
        "## 4xx by reason",
        "",
    ]
    lines += [f"- {k}: {v}" for k, v in r["four_xx_by_reason"].items()]
    if r["schemathesis"]:
        lines += ["", "## schemathesis failures (distinct)", ""]
        for f in r["schemathesis"]:
            for x in f["failures"]:
                lines.append(
                    f"- [{f['label']}] {'**SERVER ERROR** ' if x['hard'] else ''}{x['check']} ({x['code']}) on {x['operation']}"
                    f" ×{x['occurrences']}: {x['title']}{' — ' + x['message'].splitlines()[0][:200] if x['message'] else ''}"
                )
                lines.append(
                    f"  - e.g. `{x['request']}` {('body `' + x['request_body'][:200] + '`') if x['request_body'] else ''} → "
                    f"`{(x['response'] or '')[:200]}`"
                )
    lines += ["", "## Findings (not violations)", ""]
    seen = set()
    for f in r["findings"]:
        key = (f.get("kind"), f.get("case"))
        if key in seen:
            continue
        seen.add(key)
        lines.append(f"- {f.get('kind')}: {f.get('case')} — {f.get('detail') or f.get('defect') or f.get('got')}")
    lines += ["", "## Violations", ""]
    lines += [f"- {v}" for v in r["violations"]] or ["none"]
    lines += ["", "PASSED" if not r["violations"] else f"FAILED: {len(r['violations'])} violations"]
    return "\n".join(lines) + "\n"
