"""Every answer the run's own clients got, per category, and what is wrong with it: the invariants
read these at the end."""

import collections
import json
import threading
from dataclasses import dataclass, field


def problem_json_defect(status, headers, body):
    """None when the answer is RFC 9457 problem JSON for `status`, else what is wrong."""
    content_type = (headers.get("content-type") or "").split(";")[0].strip().lower()
    if content_type != "application/problem+json":
        return f"content-type {content_type or 'missing'!r}, body {body[:80]!r}"
    try:
        problem = json.loads(body)
    except ValueError:
        return f"body is not JSON: {body[:80]!r}"
    missing = [k for k in ("type", "title", "status") if k not in problem]
    if missing:
        return f"missing {', '.join(missing)}"
    if problem["status"] != status:
        return f"status {problem['status']} in the body, {status} on the wire"
    return None


def problem_reason(status, body):
    """The `reason` member of an error answer's problem JSON, if it has one."""
    if status is None or status < 400:
        return None
    try:
        return json.loads(body).get("reason")
    except Exception:
        return None


def matches(expect, status, reason):
    """Whether an answer is what `expect` says: a status, a set of statuses or (status, reason)."""
    if isinstance(expect, tuple):
        return status == expect[0] and reason == expect[1]
    if isinstance(expect, (set, frozenset)):
        return status in expect
    return status == expect


@dataclass
class Observations:
    """What the run saw. Threads (slow requests, the fuzzer's report) record concurrently: `lock`."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    inputs: collections.Counter = field(default_factory=collections.Counter)  # category -> requests (or connections)
    status: collections.defaultdict = field(
        default_factory=lambda: collections.defaultdict(collections.Counter)
    )  # category -> status -> count
    reasons: collections.Counter = field(default_factory=collections.Counter)  # "status reason" -> count (4xx)
    five_xx: list = field(default_factory=list)  # (category, case, status, body)
    not_problem_json: list = field(default_factory=list)  # (category, case, status, why)
    unexpected: list = field(default_factory=list)  # (category, case, expected, got, body): must differ
    findings: list = field(default_factory=list)  # soft: worth knowing, not a violation of this run's invariants
    hostile_event_ids: dict = field(default_factory=dict)  # event id -> case: accepted (202), must be refused
    expected_verdicts: dict = field(default_factory=dict)  # event id -> (case, reason the verifier must give)
    allowed_verified: dict = field(default_factory=dict)  # event id -> case: legitimately valid (replay originals)
    answers: list = field(default_factory=list)  # every answer our raw clients got, for answers.jsonl

    def count(self, category, inputs=1):
        """Inputs that get no HTTP answer to record (connections held open, pipelined requests)."""
        with self.lock:
            self.inputs[category] += inputs

    def observe(self, category, case, status, headers, body, expect=None, protocol_level=False):
        """Records one answer; returns its problem reason. `expect`: a status, a set of statuses or
        (status, reason); a mismatch is noted. `protocol_level`: the request was not valid HTTP, so the
        answer comes from the HTTP parser (no route ran); a bare 400 there is noted as a finding, not a
        problem-JSON violation."""
        fuzzed = category.startswith("fuzz-")
        with self.lock:
            self.inputs[category] += 1
            self.status[category][str(status) if status is not None else "no answer"] += 1
            reason = problem_reason(status, body)
            if status == 202 and not fuzzed:
                # Whatever ingest accepted from a hostile request must get a verdict (slow valid ones are
                # moved to allowed_verified by their caller).
                try:
                    self.hostile_event_ids[json.loads(body)["event-identifier"]] = f"{category}: {case}"
                except Exception:
                    pass
            if not fuzzed:
                self.answers.append(
                    {
                        "category": category,
                        "case": case,
                        "status": status,
                        "reason": reason,
                        "content_type": headers.get("content-type"),
                        "body": body[:160].decode("utf-8", "replace"),
                    }
                )
            if status is not None and status >= 500:
                self.five_xx.append(
                    {
                        "category": category,
                        "case": case,
                        "status": status,
                        "body": body[:300].decode("utf-8", "replace"),
                    }
                )
            if status is not None and 400 <= status < 600:
                self.reasons[f"{status} {reason or '(no problem JSON)'}"] += 1
                defect = problem_json_defect(status, headers, body)
                if defect:
                    entry = {"category": category, "case": case, "status": status, "defect": defect}
                    if protocol_level:
                        self.findings.append({"kind": "protocol-level error without problem JSON", **entry})
                    else:
                        self.not_problem_json.append(entry)
            if expect is not None and not matches(expect, status, reason):
                self.unexpected.append(
                    {
                        "category": category,
                        "case": case,
                        "expected": str(expect),
                        "got": status,
                        "reason": reason,
                        "body": body[:200].decode("utf-8", "replace"),
                    }
                )
            return reason
