"""The scale comparison from its measured figures on: the campaign offered (the capacity bench.py found,
unless set), the capacity model docs/operating/capacity.md scales, the lines printed, the report's
section, and the column bench_record.py takes from scale.json."""

import json
import os
import tempfile
import unittest

from bench_record import headline
from bench_scale import campaign_offer, model, report_section, summary_lines
from tests.test_bench_record import report


def measured(mode, sustained, nodes, primaries):
    """One mode's figures as run() returns them, with round per-event costs."""
    return {
        "mode": mode,
        "nodes": nodes,
        "primaries": primaries,
        "offered": {"offeredPerSecond": 3000, "batch": 10, "shed": 12, "accepted": 29_988},
        "accepted": 29_988,
        "sustained_per_s": sustained,
        "service_us_per_event": {"ingest": 50.0, "verifier": 90.0},
        "redis_us_per_event_all_nodes": 45.0,
        "redis_us_per_event_primaries": 30.0,
        "redis_busiest_primary_share": 0.4,
        "redis_commands_per_event": 7.25,
        "idle_core_share": {"ingest": 0.001, "redis": 0.02},
    }


class CampaignOfferTests(unittest.TestCase):
    def offer(self, report_json, environ=None):
        with tempfile.TemporaryDirectory() as out:
            if report_json is not None:
                with open(os.path.join(out, "report.json"), "w") as f:
                    f.write(report_json)
            return campaign_offer(out, environ or {})

    def test_the_five_services_capacity_in_its_batches(self):
        ramp = {"five_services": {"ramp": {"capacity_per_s": 4200, "batch": 100}}}
        self.assertEqual(self.offer(json.dumps(ramp)), ("4200", "100"))

    def test_without_a_capacity_single_events_at_3000(self):
        self.assertEqual(self.offer(None), ("3000", "1"))
        self.assertEqual(self.offer("{not json"), ("3000", "1"))
        self.assertEqual(self.offer(json.dumps({"verifier": {}})), ("3000", "1"))
        ramp = {"five_services": {"ramp": {"capacity_per_s": 0, "batch": 100}}}
        self.assertEqual(self.offer(json.dumps(ramp)), ("3000", "1"))

    def test_the_environment_overrides_each(self):
        ramp = {"five_services": {"ramp": {"capacity_per_s": 4200, "batch": 100}}}
        self.assertEqual(self.offer(json.dumps(ramp), {"BENCH_CAMPAIGN_BATCH": "10"}), ("4200", "10"))


class ModelTests(unittest.TestCase):
    def test_primaries_at_half_a_core_workers_at_seventy_percent(self):
        need = model(measured("cluster", 2500.0, 6, 3))
        self.assertAlmostEqual(need["1e4/s"]["primaries"], 0.6)
        # Replicas' share: (45 - 30) µs over 3 primaries, one replica each.
        self.assertAlmostEqual(need["1e4/s"]["replica_cores"], 0.15)
        self.assertAlmostEqual(need["1e4/s"]["worker_cores"], 2.0)
        self.assertAlmostEqual(need["1e6/s"]["worker_cores"], 200.0)
        # A billion impressions a day, at three times its average rate.
        self.assertAlmostEqual(need["1e9 impressions/day (peak 3x)"]["primaries"], 1e9 / 86400 * 3 * 30 / 1e6 / 0.5)


class ReportTests(unittest.TestCase):
    def results(self):
        results = {"single": measured("single", 4000.0, 1, 1), "cluster": measured("cluster", 3000.0, 6, 3)}
        results["model"] = model(results["cluster"])
        return results

    def test_a_printed_line_per_mode_and_per_modelled_rate(self):
        lines = summary_lines(self.results())
        self.assertEqual(len(lines), 2 + 4)
        self.assertTrue(lines[0].startswith("single: 4,000 events/s sustained (29,988 accepted, 12 shed, at 3,000/s"))
        self.assertIn(
            "30 on the 3 primaries (busiest 40%), 7.2 commands/event; idle: ingest 0.1%, redis 2.0%", lines[1]
        )
        self.assertEqual(lines[2], "model 1e4/s: 0.6 primaries, 0.1 replica cores, 2.0 worker cores")

    def test_the_section_has_a_row_per_mode_and_the_model(self):
        lines = report_section(self.results(), "3000", "10")
        self.assertIn("(3000 events/s in batches of 10:", lines[3])
        self.assertTrue(lines[7].startswith("| single (1 primary, 1 node) | 4,000 | 45 | 30 | 40% | 7.2 | ingest 50,"))
        self.assertTrue(lines[8].startswith("| cluster (3 primaries, 6 nodes) | 3,000 |"))
        self.assertEqual(lines[-4], "- 1e4/s: 0.6 primaries, 0.1 replica cores, 2.0 worker cores")

    def test_one_mode_alone_has_no_model(self):
        lines = report_section({"single": measured("single", 4000.0, 1, 1)}, "3000", "1")
        self.assertEqual(len(lines), 8)
        self.assertNotIn("Model", "\n".join(lines))

    def test_the_recorded_column_is_cluster_over_single(self):
        self.assertEqual(headline(report(), self.results())["cluster_to_single"], "0.750")


if __name__ == "__main__":
    unittest.main()
