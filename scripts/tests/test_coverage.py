"""Every Python module under scripts/ is tested or exercised, and this test holds the rule.

A module counts as tested when a test module here imports it by name (`import bench`, `from hostile
import report`, `from hostile.run import …`), loads its file by name (mutation-check.py, whose name is
not an identifier), or, for a package's `__main__`, runs `python -m` on the package. It counts as
exercised when scripts/test.sh, the test command, runs it: a `scripts/….py` or `scripts/….sh` named on a
line of test.sh that is not a comment, followed through the shell scripts it names the same way
(faults.sh runs faults.py), and through the imports of every Python module so reached (faults.py
imports netns and node_partitions). A name in a comment or a docstring is not a run.

UNEXERCISED lists the modules that are neither, each with why: the test fails on any module that is
neither and not listed, and on a listed one that has since become tested or exercised (take it off)."""

import ast
import re
import unittest
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[1]

# Attacks on a running pipeline, only run by scripts/hostile.sh (it builds and starts every service):
# each opens raw sockets to the services and judges their answers, with no logic apart from that.
UNEXERCISED = {
    "hostile.events": "replays and Int64-edge values against the running pipeline, judged by its Redis",
    "hostile.exhaustion": "oversized bodies, slow and idle connections against the running ingest",
    "hostile.flood": "a flood of forged impressions against the running ingest and its Redis",
}


def modules():
    """Module name → file, for every .py under scripts/ but the tests."""
    found = {}
    for path in sorted(SCRIPTS.rglob("*.py")):
        relative = path.relative_to(SCRIPTS)
        if relative.parts[0] == "tests":
            continue
        parts = list(relative.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imported(source):
    """Module names `source` imports: `import a.b` and `from a import b` name a.b (when a.b is a module)
    and a."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    # `import hostile.run` loads hostile too.
    names.update(name.rsplit(".", 1)[0] for name in list(names) if "." in name)
    return names


def tested(all_modules):
    """The modules a test module imports, loads by file name, or runs with `python -m`."""
    names = set()
    for test in sorted((SCRIPTS / "tests").glob("test_*.py")):
        source = test.read_text()
        names |= imported(source)
        for name, path in all_modules.items():
            if not path.stem.isidentifier() and re.search(rf"[\"']{re.escape(path.name)}[\"']", source):
                names.add(name)
            if name.endswith(".__main__") and re.search(
                rf"[\"']-m[\"'],\s*[\"']{name[: -len('.__main__')]}[\"']", source
            ):
                names.add(name)
    return names & set(all_modules)


def commands(shell):
    """The scripts a shell script names on its lines that are not comments."""
    lines = [line for line in shell.splitlines() if not line.lstrip().startswith("#")]
    return set(re.findall(r"scripts/([\w./-]+\.(?:py|sh))", "\n".join(lines)))


def exercised(all_modules):
    """The modules scripts/test.sh runs, through the shell scripts it names and the imports of what it runs."""
    by_file = {path.relative_to(SCRIPTS).as_posix(): name for name, path in all_modules.items()}
    pending, seen, names = ["test.sh"], set(), set()
    while pending:
        file = pending.pop()
        if file in seen or not (SCRIPTS / file).exists():
            continue
        seen.add(file)
        source = (SCRIPTS / file).read_text()
        if file.endswith(".sh"):
            pending += sorted(commands(source))
            continue
        names.add(by_file[file])
        pending += [
            all_modules[name].relative_to(SCRIPTS).as_posix() for name in imported(source) if name in all_modules
        ]
    return names


class CoverageRuleTests(unittest.TestCase):
    def test_every_module_is_tested_or_exercised(self):
        all_modules = modules()
        covered = tested(all_modules) | exercised(all_modules)
        neither = sorted(set(all_modules) - covered - set(UNEXERCISED))
        self.assertEqual(neither, [], "give each a test module in scripts/tests/ (or run it from scripts/test.sh)")

    def test_the_exceptions_are_still_exceptions(self):
        all_modules = modules()
        covered = tested(all_modules) | exercised(all_modules)
        self.assertEqual(sorted(set(UNEXERCISED) - set(all_modules)), [], "gone: take it off UNEXERCISED")
        self.assertEqual(sorted(set(UNEXERCISED) & covered), [], "covered now: take it off UNEXERCISED")

    def test_the_criterion_follows_runs_not_mentions(self):
        # faults.py is run by faults.sh, which test.sh runs; netns by faults.py's import. test.sh does not
        # run bench.sh, so bench.py is not exercised, only tested; a comment naming a script runs nothing.
        all_modules = modules()
        self.assertTrue({"faults", "netns", "node_partitions", "pins", "embed_openapi"} <= exercised(all_modules))
        self.assertNotIn("bench", exercised(all_modules))
        self.assertEqual(commands("# scripts/bench.sh\nbash scripts/faults.sh --short\n"), {"faults.sh"})
        self.assertEqual(
            imported("from hostile import report\nimport a.b\n"), {"hostile", "hostile.report", "a.b", "a"}
        )


if __name__ == "__main__":
    unittest.main()
