"""The declared mutation table against the code, without building: every entry fits (its rule
documented, its scenarios present, each old text once in its file), every scenario is expected by an
entry or declared untargeted with a reason, and a drifted or malformed entry is named."""

import importlib.util
import json
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPEC = importlib.util.spec_from_file_location("mutation_check", ROOT / "scripts" / "mutation-check.py")
mutation_check = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(mutation_check)


def entry(rule, expect, *edits):
    return {"rule": rule, "what": f"break {rule}", "expect": expect, "edits": edits}


class MutationTableTests(unittest.TestCase):
    def test_every_entry_fits_the_code_and_every_rule_and_scenario_has_one(self):
        self.assertEqual(mutation_check.check_table(ROOT), [])

    def test_a_drifted_entry_and_an_unexplained_scenario_are_named(self):
        with tempfile.TemporaryDirectory() as folder:
            repo = Path(folder)
            (repo / "docs/concepts").mkdir(parents=True)
            (repo / "docs/concepts/attribution-rules.md").write_text("- `rule-a`: a\n- `rule-b`: b\n")
            (repo / "Scenarios").mkdir()
            for name in ("a.json", "quiet.json", "explained.json"):
                (repo / "Scenarios" / name).write_text("{}")
            (repo / "Rules.swift").write_text("if  a { return 1 }\nif b { return 2 }\nif b { return 2 }\n")
            entries = [
                entry("rule-a", ["a.json"], ("Rules.swift", "if a {\n return 1 }", "")),
                entry("rule-b", ["a.json", "gone.json"], ("Rules.swift", "if b", "")),
                entry("rule-c", ["a.json"], ("Rules.swift", "if b { return 2 }", "")),
            ]
            untargeted = {"explained.json": "why", "a.json": "why", "removed.json": "why"}
            problems = mutation_check.check_table(repo, entries, untargeted)
            self.assertEqual(
                problems,
                [
                    "rule-c: rule id not in docs/concepts/attribution-rules.md",
                    "rule-b: scenario gone: gone.json",
                    "rule-c: old text found 2 times in Rules.swift: if b { return 2 }",
                    f"quiet.json: no entry expects it to fail and {mutation_check.TABLE} says not why",
                    "removed.json: declared untargeted but gone",
                    "a.json: declared untargeted but an entry expects it",
                ],
            )

    def test_a_malformed_entry_stops_the_run_with_what_is_wrong(self):
        with tempfile.TemporaryDirectory() as folder:
            repo = Path(folder)
            (repo / mutation_check.TABLE).parent.mkdir(parents=True)
            table = {"mutations": [{"rule": "rule-a", "what": "w", "expect": []}]}
            (repo / mutation_check.TABLE).write_text(json.dumps(table))
            with self.assertRaisesRegex(SystemExit, "entry 1 needs .*'edits'"):
                mutation_check.load_table(repo)


if __name__ == "__main__":
    unittest.main()
