"""Throughput against round-trip time, from the measured figures on: which settings run, the services'
extra settings, the ratios to loopback and to the relay at 0 ms, the report's table, and the columns
bench_record.py takes from rtt.json."""

import unittest

from bench_record import headline
from bench_rtt import ALL_SETTINGS, RELAY_ZERO, SERVICES, chosen_settings, extra_env, ratios, report_section
from tests.test_bench_record import report


def figures(scale):
    """Every service's figure: 1000, 2000, … per second times `scale`."""
    return {name: 1000.0 * (index + 1) * scale for index, (name, _) in enumerate(SERVICES)}


RESULTS = {"loopback": figures(1.0), RELAY_ZERO: figures(0.9), "+1 ms": figures(0.81), "+10 ms": figures(0.45)}


class SettingsTests(unittest.TestCase):
    def test_all_settings_unless_some_are_named(self):
        self.assertEqual(
            [label for label, _ in chosen_settings(None)], ["loopback", RELAY_ZERO, "+1 ms", "+10 ms", "TLS"]
        )
        self.assertEqual(chosen_settings("+1 ms,loopback"), [("loopback", None), ("+1 ms", 1)])
        self.assertEqual(chosen_settings("+5 ms"), [])

    def test_extra_settings_keep_what_follows_the_first_equals_sign(self):
        self.assertEqual(extra_env("BATCH_SIZE=500 LABELS=a=b"), {"BATCH_SIZE": "500", "LABELS": "a=b"})
        self.assertEqual(extra_env(""), {})


class RatioTests(unittest.TestCase):
    def test_to_loopback_and_to_the_relay_at_zero(self):
        to_loopback, to_relay = ratios(RESULTS)
        self.assertEqual(to_loopback["loopback"], {name: 1.0 for name, _ in SERVICES})
        self.assertAlmostEqual(to_loopback["+1 ms"]["scheduler"], 0.81)
        self.assertEqual(set(to_relay), {"+1 ms", "+10 ms"})
        self.assertAlmostEqual(to_relay["+10 ms"]["ingest"], 0.5)

    def test_without_the_relay_at_zero_only_loopback_ratios(self):
        to_loopback, to_relay = ratios({"loopback": figures(1.0), "+1 ms": figures(0.5)})
        self.assertEqual(to_relay, {})
        self.assertAlmostEqual(to_loopback["+1 ms"]["dispatcher"], 0.5)

    def test_the_recorded_columns_are_the_ratios_at_one_ms(self):
        to_loopback, to_relay = ratios(RESULTS)
        row = headline(report(), None, None, {"ratios": to_loopback, "ratios_to_relay_at_0_ms": to_relay})
        self.assertEqual(row["rtt_1ms_verifier"], "0.810")


class ReportTests(unittest.TestCase):
    def test_a_row_per_service_and_a_column_per_setting_after_loopback(self):
        lines = report_section(RESULTS, *ratios(RESULTS), settings=ALL_SETTINGS[:4])
        self.assertEqual(lines[5], "| service | loopback | relay, +0 ms | +1 ms | +10 ms |")
        self.assertEqual(lines[6], "|---|---|---|---|---|")
        self.assertEqual(len(lines), 7 + len(SERVICES))
        self.assertEqual(
            lines[7], "| ingest (events/s accepted) | 1,000 | 900 (90%) | 810 (81%; 90%) | 450 (45%; 50%) |"
        )

    def test_tls_is_a_ratio_to_loopback(self):
        results = {"loopback": figures(1.0), "TLS": figures(0.9)}
        lines = report_section(results, *ratios(results), settings=chosen_settings("loopback,TLS"))
        self.assertEqual(lines[5], "| service | loopback | TLS |")
        self.assertEqual(lines[-1], "| dispatcher (deliveries/s) | 5,000 | 4,500 (90%) |")

    def test_fewer_settings_fewer_columns(self):
        results = {"loopback": figures(1.0), "+1 ms": figures(0.8)}
        lines = report_section(results, *ratios(results), settings=chosen_settings("loopback,+1 ms"))
        self.assertEqual(lines[5], "| service | loopback | +1 ms |")
        self.assertEqual(lines[-1], "| dispatcher (deliveries/s) | 5,000 | 4,000 (80%) |")


if __name__ == "__main__":
    unittest.main()
