"""The benchmark run's own logic, without the pipeline: the stages' CPU priority from its setting, the
machine's limits read from openssl's and redis-benchmark's output, the goodput ceiling of an offer, the
check of a receiver's recorded signatures (against a JWKS served on loopback), and report.md and
chart.svg from a run's figures, which bench_record.py then reads."""

import json
import os
import tempfile
import unittest

from cryptography.hazmat.primitives.asymmetric import ec

import bench
from bench_record import headline
from harness import b64url, sign_jws
from tests.support import JSONServer

# `openssl speed -seconds 1 ecdsap256` (OpenSSL 3.0) and `redis-benchmark -q` (Redis 7.0), as printed:
# the progress lines end in a carriage return, the last figure is the result.
OPENSSL_SPEED = """\
CPUINFO: OPENSSL_ia32cap=0xfffa3203078bffff:0x405fc6f1bf07ab
                              sign    verify    sign/s verify/s
 256 bits ecdsa (nistp256)   0.0000s   0.0001s  51209.0  17107.1
"""
REDIS_BENCHMARK = (
    "\rXADD bench * e v: rps=0.0 (overall: 0.0) avg_msec=-nan (overall: -nan)\r" + " " * 60 + "\r"
    "XADD bench * e v: 66666.67 requests per second, p50=0.295 msec\n\n"
)


def step(rate, good=True, accepted=None, attempt=1):
    accepted = rate * 5 if accepted is None else accepted
    return {
        "rate": rate,
        "good": good,
        "why_not": [] if good else ["accepted p99 61.0 ms"],
        "attempt": attempt,
        "accepted": accepted,
        "added": {"events": accepted},
        "goodput_per_s": accepted / 5,
        "accepted_p99_ms": 4.0 if good else 61.0,
    }


def ramp(batch, capacity):
    at = {
        "accepted": capacity * 5,
        "accepted_p99_ms": 12.5,
        "cpu_us_per_event": {"ingest": 40.0, "verifier": 60.0},
        "redis_us_per_event": 20.0,
        "redis_rewrite_us_per_event": 0.0,
        "redis_commands_per_event": 6.5,
        "figures": {"sendingCPUSeconds": 0.5},
    }
    return {
        "batch": batch,
        "capacity_per_s": capacity,
        "at_capacity": at,
        "steps": [step(capacity // 2), step(capacity), step(capacity * 2, good=False)],
        "criteria": {"step_seconds": 5.0, "factor": 1.5, "warmup_seconds": 5.0},
    }


def offer(multiple, capacity, batch):
    return {
        "rate": multiple * capacity,
        "multiple": multiple,
        "batch": batch,
        "goodput_per_s": 0.9 * capacity,
        "goodput_fraction": 0.9,
        "goodput_ceiling": 1.2,
        "accepted_p99_ms": 30.0,
        "shed_fraction": 0.5,
        "failed": 0,
        "lost": 0,
        "figures": {"acceptedAnswerP99Milliseconds": 3.0, "sendingCPUSeconds": 1.0, "requests": 100_000},
        "good": False,
    }


def results():
    """A run's report.json, in round figures (openssl verifies at 20,000/s: 50 µs each)."""
    return {
        "machine": {"cpus": 2, "kernel": "6.1.0", "stage_scheduling": "chrt --idle 0"},
        "openssl": {"sign_per_s": 50_000.0, "verify_per_s": 20_000.0},
        "redis_benchmark": {"xadd_per_s_pipeline_1": 100_000.0, "xadd_per_s_pipeline_64": 1_000_000.0},
        "loopback_floor": {"connections": 128, "us_per_request": 10.0},
        "verifier": {"impressions_per_cpu_s": 15_000.0, "ratio_to_openssl_verify": 0.75},
        "attribution_winner": {"messages_per_s": 40_000.0, "conversions_per_s": 8_000.0},
        "scheduler": {"plans_per_s": 12_000.0},
        "dispatcher": {"deliveries_per_s": 8_000.0},
        "holding": {
            "held": 1_000_000,
            "scheduledPerSecond": 300_000.0,
            "releasedPerSecond": 400_000.0,
            "compactBytesPerHeld": 174.04,
            "jsonLayoutBytesPerHeld": 412.0,
        },
        "hold_and_fire": {"ours": {"deliveries": 3000, "per_s": 6000.0}, "rq": {"per_s": 1500.0}},
        "end_to_end": {
            "single": ramp(1, 9_000),
            "batch": ramp(100, 14_000),
            "overload": {"single_2x": offer(2, 9_000, 1), "batch_5x": offer(5, 14_000, 100)},
        },
        "ingest_latency": {
            "offeredPerSecond": 4500,
            "p50Milliseconds": 1.2,
            "p99Milliseconds": 6.7,
            "p999Milliseconds": 11.0,
            "maxMilliseconds": 20.5,
            "accepted": 45_000,
            "shed": 0,
            "failed": 0,
        },
        "five_services": {
            "ramp": ramp(100, 8_000),
            "capacity_per_s": 8_000,
            "installs": 12_000,
            "value_updates": 11_900,
            "postbacks_due": 11_800,
            "postbacks_received": 11_800,
            "postbacks_recorded": 11_800,
            "signatures_valid": 11_800,
            "wall_s": 95.0,
            "refused_by_reason": {"no-eligible-impression": 3},
        },
        "rss_mib": {"ingest": 31.2, "verifier": 24.6},
    }


class SettingTests(unittest.TestCase):
    def test_stage_scheduling(self):
        self.assertEqual(bench.stage_scheduling("idle"), ["chrt", "--idle", "0"])
        self.assertEqual(bench.stage_scheduling("none"), [])
        self.assertEqual(bench.stage_scheduling("nice -5"), ["nice", "-n", "-5"])
        with self.assertRaisesRegex(SystemExit, "must be idle, none"):
            bench.stage_scheduling("nice")


class MachineLimitTests(unittest.TestCase):
    def test_openssl_signs_and_verifies_per_second(self):
        self.assertEqual(bench.openssl_rates(OPENSSL_SPEED), {"sign_per_s": 51209.0, "verify_per_s": 17107.1})

    def test_redis_benchmark_takes_the_last_figure(self):
        self.assertEqual(bench.requests_per_second(REDIS_BENCHMARK), 66666.67)


class GoodputCeilingTests(unittest.TestCase):
    def test_every_core_busy_with_accepted_events_and_refusals_at_the_floor(self):
        # 100 µs per accepted event (40 + 60), 20 in Redis, the tool's 0.5 s over 45,000 accepted: 131.1 µs;
        # at 2× of 9,000/s, 18,000 refused requests/s of 10 µs each: (2e6 − 180,000) / 121.1 events/s.
        ceiling = bench.goodput_ceiling(ramp(1, 9_000), 2, 10.0, cores=2)
        self.assertAlmostEqual(ceiling * 9_000, (2e6 - 18_000 * 10.0) / (100 + 20 + 0.5e6 / 45_000 - 10.0))

    def test_batches_share_the_floor_among_their_events(self):
        single = bench.goodput_ceiling(ramp(1, 9_000), 5, 10.0, cores=2)
        batched = bench.goodput_ceiling(ramp(100, 9_000), 5, 10.0, cores=2)
        self.assertGreater(batched, single)

    def test_no_capacity_no_ceiling_and_never_below_zero(self):
        self.assertIsNone(bench.goodput_ceiling({**ramp(1, 0), "capacity_per_s": 0}, 2, 10.0, cores=2))
        self.assertEqual(bench.goodput_ceiling(ramp(1, 9_000), 50, 10.0, cores=2), 0.0)


class RecordedSignatureTests(unittest.TestCase):
    def test_a_record_counts_when_its_signature_and_payload_hold(self):
        key, other = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
        numbers = key.public_key().public_numbers()
        jwk = {"kid": "attribution-pipeline/0", "kty": "EC", "crv": "P-256"}
        jwk.update(x=b64url(numbers.x.to_bytes(32, "big")), y=b64url(numbers.y.to_bytes(32, "big")))
        server = JSONServer({"keys": [jwk]})
        payload = {"postback-identifier": "p1", "did-win": True}

        def record(signer, kid="attribution-pipeline/0", recorded=payload):
            jws = sign_jws(signer, {"alg": "ES256", "kid": kid}, payload)
            return json.dumps({"body": {"jws-string": jws}, "payload": recorded})

        lines = [
            record(key),
            record(key),
            record(other),  # another key's signature
            record(key, kid="attribution-pipeline/9"),  # a key the JWKS does not publish
            record(key, recorded={**payload, "did-win": False}),  # not what was signed
        ]
        try:
            with tempfile.TemporaryDirectory() as folder:
                path = os.path.join(folder, "postbacks.jsonl")
                with open(path, "w") as f:
                    f.write("\n".join(lines) + "\n")
                url = f"{server.url}/.well-known/jwks.json"
                self.assertEqual(bench.verify_recorded(path, url), (5, 2))
        finally:
            server.close()


class ReportTests(unittest.TestCase):
    def test_the_headline_table_holds_each_figure_to_its_reference(self):
        lines = bench.report_lines(results(), overload_seconds=4, max_events_lag=20_000)
        self.assertEqual(lines[0], "# Benchmark")
        self.assertIn(
            "| verifier impressions per CPU-second | 15,000 | openssl ECDSA P-256 verify/s (1 core): 20,000 | 75% |",
            lines,
        )
        self.assertIn(
            "| Redis bytes per held postback (1,000,000 held) | 174.0 | target ≤ 300; JSON layout: 412.0 | 58% of target |",
            lines,
        )
        text = "\n".join(lines)
        self.assertIn(
            "**Ingest → verifier → attribution-winner: 9,000 events/s with single-event requests (45% of", text
        )
        self.assertIn("**Accepted events lost: 0.**", text)
        self.assertIn("(20,000 events, 5,000/s over a 4 s offer)", text)
        self.assertIn("ours 6,000/s; rq 1,500/s (ours is 4.0×). Target: 3× the fastest peer (4.0× here).", text)
        self.assertTrue(lines[-1].startswith("Resident memory after the run (MiB): ingest 31, verifier 25."))

    def test_capacity_rows_count_cpu_in_openssl_verifies(self):
        row = bench.capacity_row("path", ramp(1, 9_000), 20_000.0)
        self.assertEqual(
            row, "| path | 9,000 | 45.0% | 12.5 | ingest 40 (0.80), verifier 60 (1.20) | 20 (0.40); rewrites 0 | 6.5 |"
        )

    def test_an_overload_row_and_requests_answered_too_late(self):
        record = {**offer(5, 14_000, 100), "written_unanswered": 12, "goodput_ceiling": None}
        row = bench.overload_row("batch, 5× capacity", record)
        self.assertTrue(
            row.startswith("| batch, 5× capacity | 70,000 | 12,600 | 90% | 30.0 | 3.0 | 10.0 | – | 50.0% | 0 | 0")
        )
        self.assertTrue(row.endswith(" (12 written, answered too late) |"))

    def test_a_ramp_line_names_each_step_and_why_a_bad_one_was(self):
        steps = {"batch": 1, "steps": [step(1000), step(1500, good=False), step(1500, attempt=2)]}
        self.assertEqual(
            bench.ramp_line(steps),
            "Steps (batch 1, events/s offered, in the order run): 1,000 ✓; 1,500 ✗ (accepted p99 61.0 ms); 1,500 again ✓.",
        )

    def test_peers_that_did_not_run_are_said_so(self):
        figures = {"ours": {"deliveries": 3000, "per_s": 6000.0}, "peers_error": "no network"}
        self.assertEqual(
            bench.hold_and_fire_line(figures),
            "Hold-and-fire (3,000 deliveries due at once, POSTed to the verifying receiver): ours 6,000/s; "
            "peers not measured: no network.",
        )

    def test_the_chart_has_a_bar_per_ratio_and_the_ramps_below(self):
        svg = bench.chart(results())
        self.assertTrue(svg[0].startswith('<svg xmlns="http://www.w3.org/2000/svg" width="640" height="'))
        self.assertEqual(svg[-1], "</svg>")
        text = "\n".join(svg)
        self.assertEqual(text.count('fill="#4a7bd0"/>'), 5)
        # The verifier's bar: 0.75 of 380 long, its figure after it.
        self.assertIn(
            '<rect x="220" y="38" width="285" height="18" fill="#4a7bd0"/>\n<text x="510" y="51">75%</text>', text
        )
        self.assertIn("all five services, campaign, batches of 100: capacity 8,000 events/s", text)

    def test_the_recorded_row_reads_this_report(self):
        row = headline(results())
        self.assertEqual(row["all_five_to_openssl_verify"], "0.400")


if __name__ == "__main__":
    unittest.main()
