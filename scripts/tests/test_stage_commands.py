"""Counting Redis commands per stage: calls per command read from `INFO commandstats`, a phase's
commands less the script's own probes (on a real redis-server), and the table of commands per accepted
event."""

import shutil
import tempfile
import unittest

import stage_commands
from harness import Processes, free_port, redis_cli, start_redis
from stage_commands import calls, difference, table
from tests import support

COMMANDSTATS = """# Commandstats
cmdstat_xadd:calls=1200,usec=5400,usec_per_call=4.50,rejected_calls=0,failed_calls=0
cmdstat_xinfo|groups:calls=32,usec=100,usec_per_call=3.12,rejected_calls=0,failed_calls=0
cmdstat_info:calls=3,usec=90,usec_per_call=30.00,rejected_calls=0,failed_calls=0
"""


class CallTests(unittest.TestCase):
    def test_calls_per_command_subcommands_included(self):
        self.assertEqual(calls(COMMANDSTATS), {"xadd": 1200, "xinfo|groups": 32, "info": 3})

    def test_a_phase_is_what_happened_less_the_probes(self):
        before = {"xadd": 10, "info": 1}
        after = {"xadd": 40, "info": 3, "xinfo|groups": 8, "evalsha": 5}
        self.assertEqual(difference(before, after, {"info": 2, "xinfo|groups": 8}), {"evalsha": 5, "xadd": 30})


@unittest.skipUnless(shutil.which("redis-server"), "needs redis-server")
class PhaseTests(unittest.TestCase):
    def setUp(self):
        support.use_built_binaries()

    def test_the_probes_of_a_phase_are_not_its_cost(self):
        with tempfile.TemporaryDirectory() as directory:
            processes, port = Processes(directory), free_port()
            saved = stage_commands.PORT
            try:
                start_redis(processes, port, directory, aof=False, host="127.0.0.1")
                stage_commands.PORT = port

                def body():
                    for index in range(3):
                        redis_cli(port, "SET", f"k{index}", "v")  # the stage's work
                    stage_commands.redis("XLEN", "events")  # the script's own look
                    stage_commands.commandstats()

                stage_commands.measure("stage", body)
                self.assertEqual(stage_commands.phases["stage"]["commands"], {"set": 3})
            finally:
                stage_commands.PORT = saved
                stage_commands.phases.pop("stage", None)
                processes.stop_all()


class TableTests(unittest.TestCase):
    def test_per_accepted_event_a_column_per_phase(self):
        phases = {
            "ingest": {"wall_s": 10.04, "commands": {"xadd": 2000, "evalsha": 1000}},
            "verifier": {"wall_s": 3.0, "commands": {"xadd": 1000, "xreadgroup": 40, "ping": 1}},
        }
        offered = {"accepted": 1000, "offeredPerSecond": 100}
        lines = table(phases, offered, 300, 299, {"verifier": 1.5}, seconds=10)
        self.assertEqual(
            lines[0],
            "Campaign: 1000 events accepted (100/s offered for 10 s), 300 postbacks, 299 received. "
            "Redis commands per accepted event:",
        )
        self.assertEqual(lines[2:4], ["| command | ingest | verifier | all |", "|---|---|---|---|"])
        # Busiest first; a command below 0.005 per event (ping) is left out, but counts in the totals.
        self.assertEqual(
            lines[4:7],
            ["| xadd | 2.00 | 1.00 | 3.00 |", "| evalsha | 1.00 |  | 1.00 |", "| xreadgroup |  | 0.04 | 0.04 |"],
        )
        self.assertEqual(lines[7], "| **total** | **3.00** | **1.04** | **4.04** |")
        self.assertEqual(lines[-1], "Phase seconds: ingest 10.0, verifier 3.0; stage CPU seconds: verifier 1.50")

    def test_nothing_accepted_divides_by_one(self):
        lines = table({"ingest": {"wall_s": 1.0, "commands": {"xadd": 2}}}, {}, 0, 0, {})
        self.assertEqual(lines[4], "| xadd | 2.00 | 2.00 |")


if __name__ == "__main__":
    unittest.main()
