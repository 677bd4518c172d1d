"""demo.py's waiting: the expected count from the simulation's report, and the receiver polled until
it is reached (a real HTTP server on loopback standing in for the receiver's /stats)."""

import json
import os
import tempfile
import threading
import time
import unittest

from demo import expected_postbacks, wait_for_postbacks
from tests.support import JSONServer


class DemoWaitTests(unittest.TestCase):
    def setUp(self):
        # The receiver's /stats, its `accepted` count raised by the test meanwhile.
        self.server = JSONServer({"accepted": 0, "duplicates": 0, "rejected": 0})
        self.receiver = self.server.url

    def tearDown(self):
        self.server.close()

    def test_the_expected_count_is_every_window_and_the_non_winners(self):
        with tempfile.TemporaryDirectory() as folder:
            report = os.path.join(folder, "simulation.json")
            with open(report, "w") as file:
                json.dump({"expected-winning": [55, 27, 0], "expected-non-winning": 35}, file)
            self.assertEqual(expected_postbacks(report), 117)

    def test_the_wait_ends_once_every_postback_arrived(self):
        threading.Timer(0.6, lambda: self.server.answer.update(accepted=3)).start()
        waited = wait_for_postbacks(self.receiver, 3, deadline=20, settle=0.2)
        self.assertGreaterEqual(waited, 0.8)
        self.assertLess(waited, 10)

    def test_the_wait_ends_at_the_deadline_when_some_never_arrive(self):
        start = time.monotonic()
        wait_for_postbacks(self.receiver, 3, deadline=1.2, settle=0.2)
        self.assertGreaterEqual(time.monotonic() - start, 1.2)


if __name__ == "__main__":
    unittest.main()
