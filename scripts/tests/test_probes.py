"""How the network fault run counts unavailability from /ready readings (scripts/probes.py)."""

import unittest

from probes import ReadinessProbe


def probe_with(samples):
    """A probe holding `samples` (at, name, ready, took) and polling nothing."""
    probe = ReadinessProbe({}, started=0)
    probe.samples = list(samples)
    return probe


class NotReadyTests(unittest.TestCase):
    def test_each_reading_stands_until_the_next(self):
        probe = probe_with([(0, "ingest", True, 0.01), (1, "ingest", False, 0.01), (3, "ingest", True, 0.01)])
        self.assertEqual(probe.not_ready("ingest", 0, 10), 2.0)

    def test_only_within_the_window(self):
        probe = probe_with([(0, "ingest", False, 0.01), (4, "ingest", True, 0.01)])
        self.assertEqual(probe.not_ready("ingest", 1, 2), 1.0)

    def test_a_slow_answer_counts_as_unavailable(self):
        probe = probe_with([(0, "verifier", True, 2.5), (2.5, "verifier", True, 0.01)])
        self.assertEqual(probe.not_ready("verifier", 0, 5), 2.5)

    def test_other_services_do_not_count(self):
        probe = probe_with([(0, "verifier", False, 0.01), (2, "verifier", True, 0.01)])
        self.assertEqual(probe.not_ready("ingest", 0, 5), 0.0)


class SummaryTests(unittest.TestCase):
    def test_a_fault_on_one_host_hits_that_service_until_five_seconds_after_it(self):
        probe = probe_with([(0, "ingest", True, 0.01), (10, "ingest", False, 0.3), (12, "ingest", True, 0.01)])
        probe.urls = {"ingest": "http://ingest/ready", "verifier": "http://verifier/ready"}
        rows = probe.summary([("partition", "ingest", 10.0, 11.0)])
        self.assertEqual(rows[0]["not-ready-s"], {"ingest": 2.0})
        self.assertEqual(rows[0]["slowest-ready-answer-s"], 0.3)


if __name__ == "__main__":
    unittest.main()
