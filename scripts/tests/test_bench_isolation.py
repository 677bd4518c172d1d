"""The delivery-isolation figure from its two runs: the ratio (the hanging run over the healthy one), the
line printed, the report's section, and the file bench_record.py reads the ratio from."""

import unittest

from bench_isolation import isolation, report_section, summary
from bench_record import headline
from tests.test_bench_record import report


def runs(healthy_per_s, hanging_per_s):
    healthy = {"postbacks_to_answering": 6000, "wall_s": 6000 / healthy_per_s, "deliveries_per_s": healthy_per_s}
    hanging = {"postbacks_to_answering": 6000, "wall_s": 6000 / hanging_per_s, "deliveries_per_s": hanging_per_s}
    return healthy, hanging


class IsolationTests(unittest.TestCase):
    def test_the_ratio_is_the_hanging_run_over_the_healthy_one(self):
        result = isolation(*runs(4000.0, 3000.0))
        self.assertEqual(result["ratio"], 0.75)
        self.assertEqual(result["target"], 0.9)
        self.assertEqual(result["one_of_four_hanging"]["deliveries_per_s"], 3000.0)
        self.assertEqual(
            summary(result),
            "isolation: 4,000 deliveries/s to three answering destinations with all four answering, "
            "3,000 with the fourth hanging: 75% (target ≥ 90 %)",
        )

    def test_the_report_section_is_a_table_of_both_runs(self):
        lines = report_section(isolation(*runs(5000.0, 4900.0)), postbacks=8000)
        self.assertEqual(lines[1], "## Delivery isolation: one of four destinations hanging")
        self.assertIn("8,000 postbacks due for all four", lines[3])
        self.assertEqual(lines[-2], "| all four answering | 5,000 | 100 % |")
        self.assertEqual(lines[-1], "| the fourth hanging | 4,900 | 98% (target ≥ 90 %) |")

    def test_the_recorded_column_is_this_ratio(self):
        row = headline(report(), None, isolation(*runs(4000.0, 3600.0)))
        self.assertEqual(row["isolation_one_of_four_hanging"], "0.900")


if __name__ == "__main__":
    unittest.main()
