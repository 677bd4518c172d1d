"""Property-based fuzzing from ingest's OpenAPI document with schemathesis (pinned, in a venv of its
own): every request it sent is checked like the run's own (5xx, problem JSON, accepted event ids), and
its check failures are collected, one per check and operation."""

import base64
import collections
import json
import os
import subprocess
import sys
import time

from hostile.progress import log
from pins import pinned

SCHEMATHESIS = pinned("schemathesis")  # its checks and report format are what we parse
VENV = os.path.expanduser("~/.cache/attribution-pipeline/hostile-venv")

# Checks whose failure means a bug on our side; the rest are reported as conformance notes.
HARD_CHECKS = {"not_a_server_error"}


def ensure_schemathesis():
    exe = os.path.join(VENV, "bin", "schemathesis")
    if os.path.exists(exe):
        version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
        if SCHEMATHESIS.split("==")[1] in version:
            return exe
    log(f"installing {SCHEMATHESIS} into {VENV}")
    subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
    subprocess.run([os.path.join(VENV, "bin", "pip"), "install", "--quiet", SCHEMATHESIS], check=True, timeout=900)
    return exe


def fuzz(run, label, auth, listener):
    """Runs schemathesis over every operation of one listener ("public": ingest's event API; "admin":
    the admin API and /metrics on the admin service's port), with the run's credentials if `auth`;
    returns its figures and every failure."""
    exe = ensure_schemathesis()
    target, options = run.target, run.options
    label = f"{label}-{listener}"
    directory = os.path.join(run.out, "schemathesis", label)
    os.makedirs(directory, exist_ok=True)
    config = os.path.join(directory, "schemathesis.toml")
    with open(config, "w") as f:
        # Credentials per security scheme of the document: admin routes get the admin token, event
        # routes the app key. Without credentials the file leaves auth out entirely.
        if auth:
            f.write(
                f'[auth.openapi.adminToken]\nbearer = "{target.admin_token}"\n\n'
                f'[auth.openapi.appKey]\nbearer = "{target.fuzz_app_key}"\n'
            )
    admin = listener == "admin"
    port, paths = (target.admin_port, "--include-path-regex") if admin else (target.ingest_port, "--exclude-path-regex")
    argv = [
        exe,
        "--config-file",
        config,
        "run",
        f"http://127.0.0.1:{target.ingest_port}/openapi.json",
        "--url",
        f"http://127.0.0.1:{port}",
        paths,
        "^/(v1/admin/|metrics)",
        "--checks",
        "all",
        "--max-examples",
        str(options.examples),
        "--max-time",
        str(options.fuzz_seconds),
        "--workers",
        "2",
        "--seed",
        str(options.seed),
        "--request-timeout",
        "20",
        "--no-color",
        "--generation-database",
        "none",
        "--report",
        "ndjson,har",
        "--report-dir",
        directory,
        "--suppress-health-check",
        "all",
        "--continue-on-failure",
    ]
    log(f"schemathesis ({label}): {' '.join(argv[1:])}")
    started = time.time()
    # Run inside the report directory: schemathesis keeps a `.schemathesis/` cache in its working directory.
    result = subprocess.run(argv, capture_output=True, text=True, timeout=options.fuzz_seconds * 4 + 300, cwd=directory)
    with open(os.path.join(directory, "output.txt"), "w") as f:
        f.write(result.stdout + result.stderr)
    figures = {"label": label, "exit_code": result.returncode, "seconds": round(time.time() - started, 1)}
    figures["requests"], figures["statuses"] = read_har(run.seen, directory, label)
    figures["failures"] = read_failures(directory)
    return figures


def read_har(seen, directory, label):
    """Every request schemathesis sent, with its answer, from its HAR report: observed under
    `fuzz-<label>` (5xx, problem JSON) and an accepted event's id kept for its verdict. Returns
    (requests, {status: count})."""
    requests, statuses = 0, collections.Counter()
    har = next((os.path.join(directory, n) for n in os.listdir(directory) if n.startswith("har")), None)
    if not har:
        return requests, dict(statuses)
    with open(har) as f:
        log_entries = json.load(f)["log"]["entries"]
    for entry in log_entries:
        requests += 1
        status = entry["response"]["status"]
        statuses[str(status)] += 1
        headers = {h["name"].lower(): h["value"] for h in entry["response"]["headers"]}
        text = entry["response"].get("content", {}).get("text") or ""
        if entry["response"].get("content", {}).get("encoding") == "base64":
            text = base64.b64decode(text).decode("utf-8", "replace")
        body = text.encode()
        url = entry["request"]["url"]
        case = f"{entry['request']['method']} {url[url.find('/', url.find('//') + 2) :][:120]}"
        seen.observe(f"fuzz-{label}", case, status, headers, body)
        if status == 202:
            try:
                seen.hostile_event_ids[json.loads(body)["event-identifier"]] = f"fuzz-{label}: {case}"
            except Exception:
                pass
    return requests, dict(statuses)


def read_failures(directory):
    """schemathesis's check failures from its NDJSON events: one entry per check, operation and title
    (the 405 check fails once per undeclared method), with how often it failed and the request that
    showed it, enough to reproduce with curl."""
    failures, seen = [], {}
    ndjson = next((os.path.join(directory, n) for n in os.listdir(directory) if n.endswith(".ndjson")), None)
    if not ndjson:
        return failures
    with open(ndjson) as f:
        lines = f.readlines()
    for line in lines:
        try:
            event = json.loads(line).get("ScenarioFinished")
        except ValueError:
            continue
        if not event:
            continue
        recorder = event.get("recorder") or {}
        for case_id, check_list in (recorder.get("checks") or {}).items():
            for check in check_list:
                if str(check.get("status")).lower() != "failure":
                    continue
                failure = (check.get("failure_info") or {}).get("failure") or {}
                operation = failure.get("operation") or recorder.get("label")
                key = (check.get("name"), operation, failure.get("title"))
                if key in seen:
                    seen[key]["occurrences"] += 1
                    continue
                interaction = (recorder.get("interactions") or {}).get(case_id) or {}
                seen[key] = failure_entry(check, failure, operation, interaction)
                failures.append(seen[key])
    return failures


def failure_entry(check, failure, operation, interaction):
    """One check failure as the report lists it: what failed, the request and what came back."""
    request = interaction.get("request") or {}
    response = interaction.get("response") or {}
    body = request.get("body")
    if isinstance(body, dict) and "$base64" in body:
        body = base64.b64decode(body["$base64"]).decode("utf-8", "replace")
    answer = response.get("content") or {}
    if isinstance(answer, dict) and "$base64" in answer:
        answer = base64.b64decode(answer["$base64"]).decode("utf-8", "replace")
    return {
        "check": check.get("name"),
        "code": failure.get("code"),
        "operation": operation,
        "title": failure.get("title"),
        "message": (failure.get("message") or "")[:600],
        "request": f"{request.get('method', '')} {request.get('uri', '')}"[:300],
        "request_body": str(body)[:300] if body else None,
        "response": f"{response.get('status_code')} {str(answer)[:300]}" if response else None,
        "hard": check.get("name") in HARD_CHECKS,
        "occurrences": 1,
    }
