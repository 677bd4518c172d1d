"""Recording a benchmark run: the headline row from a run's files, the data file appended, the chart
drawn from its rows, and the latest-run section of docs/benchmarks.md replaced."""

import csv
import os
import tempfile
import unittest

from bench_record import BEGIN, COLUMNS, END, append_row, chart, headline, latest_section, read_rows, replace_latest


def report():
    """The parts of bench.py's report.json the row reads, with round figures."""
    return {
        "machine": {"cpus": 2, "kernel": "6.1.0"},
        "openssl": {"sign_per_s": 50_000.0, "verify_per_s": 20_000.0},
        "redis_benchmark": {"xadd_per_s_pipeline_1": 100_000.0, "xadd_per_s_pipeline_64": 1_000_000.0},
        "verifier": {"impressions_per_cpu_s": 15_000.0, "ratio_to_openssl_verify": 0.75},
        "attribution_winner": {"messages_per_s": 40_000.0},
        "scheduler": {"plans_per_s": 12_000.0},
        "dispatcher": {"deliveries_per_s": 8_000.0},
        "holding": {"releasedPerSecond": 400_000.0, "compactBytesPerHeld": 174.04},
        "end_to_end": {"single": {"capacity_per_s": 9_000}, "batch": {"capacity_per_s": 14_000}},
        "five_services": {"capacity_per_s": 8_000},
    }


class HeadlineTests(unittest.TestCase):
    def test_ratios_are_taken_against_the_same_runs_limits(self):
        row = headline(report(), date="2026-11-29 12:00", commit="abc1234")
        self.assertEqual(list(row), COLUMNS)
        self.assertEqual(row["verifier_to_openssl_verify"], "0.750")
        self.assertEqual(row["winner_to_xadd_unpipelined"], "0.400")
        self.assertEqual(row["dispatcher_to_openssl_sign"], "0.160")
        self.assertEqual(row["all_five_to_openssl_verify"], "0.400")
        self.assertEqual(row["bytes_per_held_postback"], "174.0")
        self.assertEqual(row["revision"], "abc1234")

    def test_a_part_that_did_not_run_leaves_its_columns_empty(self):
        row = headline(report())
        for column in ("cluster_to_single", "isolation_one_of_four_hanging", "rtt_1ms_scheduler", "tls_scheduler"):
            self.assertEqual(row[column], "")

    def test_scale_isolation_and_round_trips_fill_their_columns(self):
        scale = {"single": {"sustained_per_s": 4000.0}, "cluster": {"sustained_per_s": 3000.0}}
        tls = {"ingest": 0.95, "verifier": 0.9, "attribution-winner": 0.86, "scheduler": 0.88, "dispatcher": 0.93}
        rtt = {"ratios": {"+1 ms": {"attribution-winner": 0.81, "ingest": 0.9}, "TLS": tls}}
        row = headline(report(), scale, {"ratio": 0.97}, rtt)
        self.assertEqual(row["cluster_to_single"], "0.750")
        self.assertEqual(row["isolation_one_of_four_hanging"], "0.970")
        self.assertEqual(row["rtt_1ms_attribution_winner"], "0.810")
        self.assertEqual(row["rtt_1ms_ingest"], "0.900")
        self.assertEqual(row["tls_attribution_winner"], "0.860")
        self.assertEqual(row["tls_dispatcher"], "0.930")
        self.assertEqual(row["tls_lowest_of_five"], "0.860")


class DataFileTests(unittest.TestCase):
    def test_rows_append_under_one_header(self):
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "runs.csv")
            append_row(path, headline(report(), date="2026-11-28 10:00"))
            append_row(path, headline(report(), date="2026-11-29 10:00"))
            with open(path) as f:
                self.assertEqual(next(csv.reader(f)), COLUMNS)
            self.assertEqual([row["date"] for row in read_rows(path)], ["2026-11-28 10:00", "2026-11-29 10:00"])

    def test_a_file_from_before_new_columns_is_rewritten_under_the_current_header(self):
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "runs.csv")
            old = COLUMNS[:-3]
            with open(path, "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=old)
                writer.writeheader()
                writer.writerow({column: headline(report(), date="2026-11-28 10:00")[column] for column in old})
            append_row(path, headline(report(), rtt={"ratios": {"TLS": {"ingest": 0.9}}}, date="2026-11-29 10:00"))
            with open(path) as f:
                self.assertEqual(next(csv.reader(f)), COLUMNS)
            rows = read_rows(path)
            self.assertEqual([row["date"] for row in rows], ["2026-11-28 10:00", "2026-11-29 10:00"])
            self.assertEqual([row["tls_lowest_of_five"] for row in rows], ["", "0.900"])
            self.assertEqual(rows[0]["verifier_to_openssl_verify"], "0.750")

    def test_a_file_with_an_unknown_column_is_refused_untouched(self):
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "runs.csv")
            with open(path, "w") as f:
                f.write("date,mystery\n2026-11-28 10:00,1\n")
            with self.assertRaises(SystemExit):
                append_row(path, headline(report()))
            with open(path) as f:
                self.assertEqual(f.read(), "date,mystery\n2026-11-28 10:00,1\n")

    def test_the_chart_draws_a_line_per_ratio_and_skips_missing_figures(self):
        first = headline(report(), date="2026-11-28 10:00", commit="aaa")
        second = headline(report(), None, {"ratio": 0.95}, date="2026-11-29 10:00")
        svg = chart([first, second])
        self.assertTrue(svg.startswith("<svg") and svg.rstrip().endswith("</svg>"))
        # verifier, dispatcher and all-five in both runs: three two-point lines; isolation only in the
        # second: a lone point, no line; the round trip in neither.
        self.assertEqual(svg.count("<polyline"), 3)
        self.assertEqual(svg.count("<circle"), 7)
        self.assertIn("2026-11-28 aaa", svg)


class LatestRunTests(unittest.TestCase):
    def test_the_report_replaces_only_the_latest_section(self):
        document = f"# Benchmarks\n\nMethod.\n\n## Latest run\n\n{BEGIN}\nold\n{END}\n\nAfter.\n"
        row = headline(report(), date="2026-11-29 12:00", commit="abc1234")
        section = latest_section("# Benchmark\n\nFigures.\n\n## Capacity\n\nMore.\n", row)
        updated = replace_latest(document, section)
        self.assertNotIn("old", updated)
        self.assertTrue(updated.startswith("# Benchmarks\n\nMethod.") and updated.endswith("After.\n"))
        self.assertIn("at commit `abc1234` on 2 CPUs", updated)
        self.assertIn("\n### Capacity\n", updated)
        self.assertNotIn("# Benchmark\n", updated)
        # Recorded twice, the page still has one latest-run section.
        self.assertEqual(replace_latest(updated, section).count(BEGIN), 1)

    def test_a_page_without_the_markers_is_refused(self):
        with self.assertRaises(SystemExit):
            replace_latest("# Benchmarks\n", "section")


if __name__ == "__main__":
    unittest.main()
