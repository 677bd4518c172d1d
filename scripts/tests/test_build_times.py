"""The build-time measurement: its wrapper logs a real compile, and the log is summed per target."""

import os
import subprocess
import tempfile
import unittest
from pathlib import Path

from build_times import install_wrappers, report, seconds, summarise, target_of


class BuildTimesTests(unittest.TestCase):
    def test_bash_times_are_read_as_seconds(self):
        self.assertAlmostEqual(seconds("1m2.500s"), 62.5)
        self.assertEqual(seconds("garbage"), 0.0)

    def test_jobs_are_told_apart_by_module_or_output(self):
        self.assertEqual(target_of("swift", "NIOCore", "-"), "NIOCore")
        self.assertEqual(target_of("cc", "-", "/x/debug/CNIOBoringSSL.build/a.cc.o"), "CNIOBoringSSL")
        self.assertEqual(target_of("swift", "-", "-"), "(driver queries)")

    def test_a_real_c_compile_is_logged_and_summed(self):
        with tempfile.TemporaryDirectory() as scratch:
            folder = Path(scratch)
            environment = {**os.environ, **install_wrappers(folder / "wrappers")}
            environment["BUILD_TIMES_LOG"] = str(folder / "jobs.log")
            source = folder / "Demo.build" / "demo.c"
            source.parent.mkdir()
            source.write_text("int answer(void) { return 42; }\n")
            output = source.with_suffix(".o")
            subprocess.run([environment["CC"], "-c", str(source), "-o", str(output)], env=environment, check=True)
            self.assertTrue(output.exists())
            targets = summarise(folder / "jobs.log")
            self.assertEqual(targets["Demo"]["jobs"], 1)
            self.assertGreater(targets["Demo"]["job_wall"], 0)
            self.assertIn("| Demo |", report(1.0, targets))


if __name__ == "__main__":
    unittest.main()
