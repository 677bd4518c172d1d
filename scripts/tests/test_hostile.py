"""hostile.py reads its command line when run, not when imported."""

import unittest

import hostile


class CommandLineTests(unittest.TestCase):
    def test_importing_reads_no_arguments(self):
        self.assertIsNone(hostile.args)
        self.assertIsNone(hostile.OUT)

    def test_the_options_and_their_defaults(self):
        options = hostile.parse_arguments(["bin", "out", "--skip-fuzz", "--hold", "4"])
        self.assertEqual((options.bin, options.out, options.skip_fuzz, options.hold), ("bin", "out", True, 4.0))
        self.assertEqual((options.idle, options.examples, options.seed), (800, 40, 10))
