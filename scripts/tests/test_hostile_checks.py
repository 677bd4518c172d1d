"""The hostile-input run's judgement and record, without a pipeline: the invariants it holds the answers,
the valid traffic and ingest's memory to, the report it writes, the impressions it signs as an ad
network would, the copies of the executables it runs, its progress lines, and `python3 -m hostile`'s
command line (test_hostile.py covers the parsing and the attacks' cases)."""

import collections
import contextlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from harness import b64url_decode
from hostile import invariants, launch, progress, report, traffic
from hostile.observations import Observations
from hostile.state import Target

SCRIPTS = Path(__file__).resolve().parents[1]


class Traffic:
    """What ValidTraffic leaves for the invariants: the acknowledged ids, counts, failures, latencies."""

    def __init__(self, ids, failures=(), latencies=(0.002, 0.004, 0.010)):
        self.ids, self.failures, self.latencies = list(ids), list(failures), list(latencies)
        self.sent = collections.Counter(impression=len(self.ids))
        self.accepted = collections.Counter(impression=len(self.ids))

    latency_ms = traffic.ValidTraffic.latency_ms


class InvariantTests(unittest.TestCase):
    def test_every_acknowledged_event_verified(self):
        figures, violations = invariants.valid_traffic(Traffic(["a", "b"]), {"a": {}, "b": {}}, {}, {})
        self.assertEqual(violations, [])
        self.assertEqual(figures["verified"], 2)
        self.assertEqual(figures["latency_ms"], {"p50": 4.0, "p99": 10.0, "max": 10.0})

    def test_missing_events_are_counted_by_why(self):
        rejected = {"b": {"reason": "expired"}}
        figures, violations = invariants.valid_traffic(
            Traffic(["a", "b", "c", "d"], failures=["503 overloaded"]), {"a": {}}, rejected, {"c": "verifier:dead"}
        )
        self.assertEqual(figures["refused_by_verifier"], {"expired": 1, "dead-lettered in verifier:dead": 1})
        self.assertEqual(
            violations,
            [
                "1 valid requests were not acknowledged with 202 (first: 503 overloaded)",
                "3 acknowledged valid events did not reach `verified` (2 refused: "
                "{'expired': 1, 'dead-lettered in verifier:dead': 1})",
            ],
        )

    def test_the_fuzzers_app_key_events_are_its_own(self):
        conversion = {"type": "conversion.verified", "body": {"conversion": {"advertised-item-identifier": 7}}}
        self.assertTrue(invariants.of_fuzz_app(conversion, 7))
        self.assertFalse(invariants.of_fuzz_app(conversion, 8))
        self.assertFalse(invariants.of_fuzz_app({"type": "impression.verified", "body": {}}, 7))

    def test_test_postbacks_requested_with_the_admin_token_are_its_own(self):
        requested = {"type": "test-postbacks.requested", "body": {}}
        admin = "fuzz-authenticated-admin: POST /v1/admin/ad-networks/x/test-postbacks"
        self.assertTrue(invariants.requested_with_admin_token(requested, admin))
        self.assertFalse(invariants.requested_with_admin_token(requested, "fuzz-anonymous-admin: POST /v1/admin/x"))
        self.assertFalse(invariants.requested_with_admin_token({"type": "impression.verified"}, admin))

    def test_answers_that_break_the_rules(self):
        seen = Observations()
        seen.five_xx.append("POST /v1/impressions → 500")
        seen.unexpected.append({"category": "c", "case": "k", "expected": 400, "got": 202})
        fuzz = [{"failures": [{"hard": True, "check": "not_a_server_error", "operation": "GET /x", "title": "t"}]}]
        self.assertEqual(
            invariants.answers(seen, fuzz),
            [
                "1 answers were 5xx (first: POST /v1/impressions → 500)",
                "schemathesis not_a_server_error on GET /x: t",
                "c / k: expected 400, got 202",
            ],
        )
        self.assertEqual(invariants.answers(Observations(), []), [])

    def test_ingest_memory_may_grow_fourfold_or_by_256_mib(self):
        self.assertEqual(invariants.memory(30, 286), [])
        self.assertEqual(invariants.memory(100, 400), [])
        self.assertEqual(invariants.memory(30, 287), ["ingest RSS grew from 30 MiB to 287 MiB"])


def sections(violations=()):
    """Every section report.json has, with the figures of a small run."""
    values = {name: [] for name in report.SECTIONS}
    values.update(
        started="2026-01-01T00:00:00",
        seconds=60,
        inputs_per_category={"protocol": 3, "access": 2},
        inputs_total=5,
        status_per_category={"protocol": {"400": 3}, "access": {"401": 2}},
        four_xx_by_reason={"invalid-json": 3},
        five_xx=0,
        crashes=0,
        services={"ingest": {"health": True, "crashes": 0}, "verifier": {"health": True, "crashes": 1}},
        valid_traffic={"sent": 10, "accepted": 10, "verified": 10, "latency_ms": {"p50": 2, "p99": 9, "max": 12}},
        hostile_accepted_by_ingest=0,
        hostile_verdicts={},
        verified_not_from_valid_traffic=0,
        streams={},
        forged_network_flood={"requests": 2000, "bytes_per_request": 0, "new_key_count": 0},
        ingest_rss_mib={"before": 30, "peak": 40, "after": 31},
        ingest_peak_fds=64,
        findings=[{"kind": "slow", "case": "a", "detail": "d"}, {"kind": "slow", "case": "a", "detail": "again"}],
        violations=list(violations),
    )
    values["forged_network_flood"]["keys_naming_an_unregistered_id"] = 0
    return values


class ReportTests(unittest.TestCase):
    def test_the_three_files_and_the_verdict(self):
        with tempfile.TemporaryDirectory() as out:
            written, markdown = report.write(out, sections(), [{"status": 400}])
            self.assertEqual(list(written), list(report.SECTIONS))
            with open(os.path.join(out, "report.json")) as f:
                self.assertEqual(json.load(f)["inputs_total"], 5)
            with open(os.path.join(out, "answers.jsonl")) as f:
                self.assertEqual(f.read(), '{"status": 400}\n')
            with open(os.path.join(out, "report.md")) as f:
                self.assertEqual(f.read(), markdown)
        self.assertIn("| access | 2 | 401: 2 |", markdown)
        self.assertIn("ingest: up, verifier: up (restarted after 1 crashes)", markdown)
        self.assertEqual(markdown.count("- slow: a"), 1)  # a finding once, however often it was seen
        self.assertTrue(markdown.endswith("## Violations\n\nnone\n\nPASSED\n"))

    def test_violations_fail_the_run(self):
        markdown = report.render(sections(["5 answers were 5xx"]))
        self.assertTrue(markdown.endswith("- 5 answers were 5xx\n\nFAILED: 1 violations\n"))
        self.assertEqual(report.service_state("admin", {"health": False, "crashes": 0}), "admin: DOWN")


class TrafficTests(unittest.TestCase):
    def test_a_campaign_impression_signed_as_its_network_would(self):
        key = ec.generate_private_key(ec.SECP256R1())
        target = Target(1, 2, 3, 4, "admin-token", key, "ak", "fk")
        header, payload, signature = traffic.campaign_jws(target, source=39).split(".")
        self.assertEqual(json.loads(b64url_decode(header)), {"alg": "ES256", "kid": target.network})
        raw = b64url_decode(signature)
        der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
        key.public_key().verify(der, f"{header}.{payload}".encode(), ec.ECDSA(hashes.SHA256()))
        claims = json.loads(b64url_decode(payload))
        self.assertEqual((claims["advertised-item-identifier"], claims["source-identifier"]), (target.app, 39))
        self.assertRegex(claims["impression-identifier"], "^[0-9A-F-]{36}$")

    def test_the_body_clicks_half_a_second_after_loading(self):
        body = traffic.impression_body("jws", "device-1")
        self.assertEqual(body["interaction"]["time"] - body["interaction"]["loaded-at"], 500)
        self.assertEqual((body["device-identifier"], body["impression"]), ("device-1", "jws"))

    def test_no_latencies_no_figure(self):
        self.assertIsNone(Traffic([], latencies=[]).latency_ms(0.5))


class LaunchTests(unittest.TestCase):
    def test_the_run_copies_every_executable_it_starts(self):
        with tempfile.TemporaryDirectory() as source, tempfile.TemporaryDirectory() as out:
            for name in launch.SERVICES + ["attribution"]:
                Path(source, name).write_text(name)
                os.chmod(Path(source, name), 0o755)
            bin_dir = launch.copy_binaries(source, out)
            self.assertEqual(sorted(os.listdir(bin_dir)), sorted(launch.SERVICES + ["attribution"]))
            self.assertEqual(Path(bin_dir, "verifier").read_text(), "verifier")
            self.assertTrue(os.access(Path(bin_dir, "ingest"), os.X_OK))


class ProgressTests(unittest.TestCase):
    def test_a_time_stamped_line(self):
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            progress.log("fuzzing ingest")
        self.assertRegex(printed.getvalue(), r"^\[\d\d:\d\d:\d\d\] fuzzing ingest\n$")


class EntryPointTests(unittest.TestCase):
    def test_python_m_hostile_reads_its_command_line(self):
        # hostile/__main__.py, as scripts/hostile.sh runs it: --help answers without starting anything.
        done = subprocess.run(
            [sys.executable, "-m", "hostile", "--help"], cwd=SCRIPTS, capture_output=True, text=True, timeout=60
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertTrue(re.search(r"usage: .*bin.*out", done.stdout, re.S), done.stdout)


if __name__ == "__main__":
    unittest.main()
