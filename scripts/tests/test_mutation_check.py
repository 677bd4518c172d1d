"""The mutation table against the code, without building: every entry fits (its rule documented, its
scenarios present, each old text once in its file), and a drifted entry is named as stale."""

import importlib.util
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPEC = importlib.util.spec_from_file_location("mutation_check", ROOT / "scripts" / "mutation-check.py")
mutation_check = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(mutation_check)


class MutationTableTests(unittest.TestCase):
    def test_every_entry_fits_the_code_and_every_rule_has_one(self):
        self.assertEqual(mutation_check.check_table(ROOT), [])

    def test_a_drifted_entry_is_stale(self):
        with tempfile.TemporaryDirectory() as folder:
            repo = Path(folder)
            (repo / "docs/concepts").mkdir(parents=True)
            (repo / "docs/concepts/attribution-rules.md").write_text("- `rule-a`: a\n- `rule-b`: b\n")
            (repo / "Scenarios").mkdir()
            (repo / "Scenarios/a.json").write_text("{}")
            (repo / "Rules.swift").write_text("if  a { return 1 }\nif b { return 2 }\nif b { return 2 }\n")
            entries = [
                mutation_check.M("rule-a", "drop a", ["a.json"], ("Rules.swift", "if a {\n return 1 }", "")),
                mutation_check.M("rule-b", "drop b", ["a.json", "gone.json"], ("Rules.swift", "if b", "")),
                mutation_check.M("rule-c", "drop c", ["a.json"], ("Rules.swift", "if b { return 2 }", "")),
            ]
            problems = mutation_check.check_table(repo, entries)
            self.assertEqual(
                problems,
                [
                    "rule-c: rule id not in docs/concepts/attribution-rules.md",
                    "rule-b: scenario gone: gone.json",
                    "rule-c: old text found 2 times in Rules.swift: if b { return 2 }",
                ],
            )


if __name__ == "__main__":
    unittest.main()
