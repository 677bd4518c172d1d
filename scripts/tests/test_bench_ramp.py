"""The capacity search's decisions, without a pipeline: what makes a step bad, the backlog's slope, the
rates the search runs (up by its factor, then bisected), a bad step run once more before it counts, and
the chart of a ramp's steps."""

import unittest

from bench_ramp import Bench, ramp_chart, search, shortfalls, slope


def figures(accepted=1000, sent=1000, p99=10.0, requests=10):
    """The fields of `attribution-bench load`'s last line that a step is judged by."""
    return {"accepted": accepted, "sent": sent, "acceptedP99Milliseconds": p99, "acceptedRequests": requests}


class ShortfallTests(unittest.TestCase):
    def test_a_good_step_has_none(self):
        self.assertEqual(shortfalls(figures(accepted=990), 1000, 49.0, 0, 900, 0.4), [])

    def test_each_criterion_names_itself(self):
        self.assertEqual(shortfalls(figures(accepted=989), 1000, 0, 0, 0, 0.1), ["accepted 98.9% of offered"])
        self.assertEqual(shortfalls(figures(p99=50.5), 1000, 0, 0, 0, 0.1), ["accepted p99 50.5 ms"])
        # Nothing accepted at all has no p99 worth believing.
        self.assertIn("accepted p99 0.0 ms", shortfalls(figures(accepted=0, p99=0, requests=0), 1000, 0, 0, 0, 0.1))
        self.assertEqual(shortfalls(figures(), 1000, 51.0, 0, 0, 0.1), ["backlog grew 51/s to 0"])
        self.assertEqual(shortfalls(figures(), 1000, 0, 100, 1_101, 0.1), ["backlog grew 0/s to 1,101"])
        self.assertEqual(shortfalls(figures(), 1000, 0, 0, 0, None), ["did not drain"])

    def test_a_low_rate_may_end_with_500_entries_left(self):
        self.assertEqual(shortfalls(figures(accepted=100, sent=100), 100, 0, 0, 500, 0.1), [])
        self.assertEqual(len(shortfalls(figures(accepted=100, sent=100), 100, 0, 0, 501, 0.1)), 1)


class SlopeTests(unittest.TestCase):
    def test_least_squares_over_the_samples(self):
        self.assertAlmostEqual(slope([(0, 0), (1, 2), (2, 4)]), 2.0)
        self.assertAlmostEqual(slope([(10, 5), (11, 3), (12, 7), (13, 5)]), 0.4)

    def test_too_few_samples_or_one_instant_is_flat(self):
        self.assertEqual(slope([(0, 1), (1, 500)]), 0.0)
        self.assertEqual(slope([(3, 1), (3, 2), (3, 3)]), 0.0)


class SearchTests(unittest.TestCase):
    def searched(self, capacity, start=250):
        rates = []

        def run(rate):
            rates.append(rate)
            return rate <= capacity

        return search(run, start, factor=1.5, max_steps=12, refine=3), rates

    def test_up_by_the_factor_then_bisected(self):
        self.assertEqual(self.searched(1000), ((981, 1032), [250, 375, 562, 843, 1264, 1032, 933, 981]))

    def test_down_while_the_first_steps_are_too_much(self):
        self.assertEqual(self.searched(100), ((99, 104), [250, 166, 110, 73, 90, 99, 104]))

    def test_nothing_good_four_steps_down_is_no_capacity(self):
        self.assertEqual(self.searched(0), ((None, 73), [250, 166, 110, 73]))

    def test_the_bisection_stops_once_the_rates_meet(self):
        (good, bad), rates = self.searched(3, start=2)
        self.assertEqual((good, bad), (3, 4))
        self.assertEqual(rates, [2, 3, 4])


class Modelled(Bench):
    """A Bench whose step is a model instead of an offer: good up to `capacity`, except the first step
    at `stall` (a hiccup on shared cores). Its Redis client is made but never used (it connects lazily)."""

    def __init__(self, capacity, stall=None):
        super().__init__("bin", 1, "http://ingest", "net", "key", {}, groups=[], streams=[])
        self.capacity, self.stall = capacity, stall

    def step(self, rate, batch, seconds=5):
        good = rate <= self.capacity and rate != self.stall
        if rate == self.stall:
            self.stall = None
        return {
            "rate": rate,
            "batch": batch,
            "accepted": rate,
            "accepted_fraction": 1.0,
            "accepted_p99_ms": 1.0,
            "backlog_before": 0,
            "backlog_after": 0,
            "backlog_growth_per_s": 0.0,
            "figures": {},
            "good": good,
            "why_not": [] if good else ["modelled"],
        }


class RampTests(unittest.TestCase):
    def test_a_bad_step_is_run_again_before_it_counts(self):
        ramp = Modelled(1000, stall=562).ramp(100, start=250, log=lambda line: None)
        self.assertEqual(
            [(s["rate"], s["attempt"]) for s in ramp["steps"]][:4], [(250, 1), (375, 1), (562, 1), (562, 2)]
        )
        self.assertEqual(ramp["capacity_per_s"], ramp["at_capacity"]["rate"])
        self.assertTrue(800 < ramp["capacity_per_s"] <= 1000 < ramp["first_bad_per_s"])
        self.assertEqual(ramp["batch"], 100)

    def test_no_capacity_leaves_no_step_at_capacity(self):
        ramp = Modelled(0).ramp(1, start=250, log=lambda line: None)
        self.assertEqual((ramp["capacity_per_s"], ramp["at_capacity"]), (0, None))


def step(rate, goodput, p99, good=True):
    return {"rate": rate, "goodput_per_s": goodput, "accepted_p99_ms": p99, "good": good}


class ChartTests(unittest.TestCase):
    def test_a_point_per_step_in_both_plots_and_a_square_per_offer(self):
        ramp = {"capacity_per_s": 1000, "steps": [step(500, 500, 3), step(1500, 1200, 80, good=False)]}
        rows, height = ramp_chart([("path", ramp, [step(2000, 900, 400)]), ("empty", {"steps": []}, [])])
        svg = "\n".join(rows)
        self.assertEqual(svg.count("<circle"), 4)
        self.assertEqual(svg.count('fill="#d04a4a"'), 2)  # the bad step, in both plots
        self.assertEqual(svg.count('fill="#e0a030"'), 2)
        self.assertIn("path: capacity 1,000 events/s", svg)
        self.assertNotIn("empty", svg)  # a ramp without steps draws nothing
        self.assertEqual(height, 210 + 24)

    def test_the_axes_reach_past_the_highest_rate(self):
        ramp = {"capacity_per_s": 0, "steps": [step(1000, 400, 2)]}
        svg = "\n".join(ramp_chart([("p", ramp, [])])[0])
        self.assertIn(">1,050</text>", svg)
        self.assertNotIn('stroke="#4a7bd0"', svg)  # no capacity, no capacity line


if __name__ == "__main__":
    unittest.main()
