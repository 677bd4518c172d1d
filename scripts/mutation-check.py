#!/usr/bin/env python3
"""Mutation check: every attribution rule's scenarios must fail when the rule is removed.

For each entry of the declared mutation table, Scenarios/mutations/table.json (a rule id from
docs/concepts/attribution-rules.md, one or more exact text edits that remove or break the rule, and the
scenario files that must then fail), on a private clone of this repository at its HEAD:

    apply the edits -> swift build (test product only) -> swift test --skip-build --filter ScenarioRuleTests
    -> collect the scenario files whose `scenario(_:)` case recorded an issue -> restore the files

and report per entry:

    PASS        every expected scenario failed
    WEAK        it built, but an expected scenario still passed (the scenario does not pin the rule)
    STALE       an edit's old text is not in its file exactly once (the code moved), or a file,
                scenario or rule id no longer exists
    BUILD-FAIL  the mutated code does not compile (fix the edit)
    CRASH       the test process died or timed out (no per-scenario result)
    SKIP        the rule is not a pure rule; the note says what checks it instead
    MISSING     a rule id in docs/concepts/attribution-rules.md has no entry here

The caller's tree is never touched: the clone lives in --workdir (default
$TMPDIR/attribution-mutation) and is reset to the caller's HEAD on every run, keeping its .build so
rebuilds are incremental. Exit status 0 only when every entry is PASS or SKIP.

    python3 scripts/mutation-check.py                 # whole table
    python3 scripts/mutation-check.py --only tier-0   # one rule (repeatable)
    python3 scripts/mutation-check.py --list          # the table, no build
    python3 scripts/mutation-check.py --check         # the table against the code, no build (the test command)
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TABLE = "Scenarios/mutations/table.json"


class Stale(Exception):
    """An entry that no longer fits the code: a file or scenario gone, an old text not found once."""


def load_table(repo):
    """The declared mutations of `repo` (TABLE): entries with `rule` and either `skip` (a note) or `what`,
    `expect` and `edits` as (file, old, new) tuples; and the untargeted scenarios with their reasons.
    A malformed entry stops the run with what is wrong, not a KeyError later."""
    table = json.loads((repo / TABLE).read_text())
    entries = []
    for number, entry in enumerate(table["mutations"], 1):
        known = {"rule", "skip", "why"} if "skip" in entry else {"rule", "what", "expect", "edits", "why"}
        needed = {"rule", "skip"} if "skip" in entry else {"rule", "what", "expect", "edits"}
        if not needed <= entry.keys() or not entry.keys() <= known:
            sys.exit(f"mutation-check: {TABLE} entry {number} needs {sorted(needed)} and has {sorted(entry)}")
        if "edits" in entry:
            entry = {**entry, "edits": tuple((e["file"], e["old"], e["new"]) for e in entry["edits"])}
        entries.append(entry)
    return entries, table.get("untargeted", {})


ISSUE = re.compile(r'recorded an issue with \d+ arguments? \w+ → "([^"]+\.json)"')
DETAIL = re.compile(r"^↳ (\S+\.json) \[[^\]]*\]: (.*)$")
SCENARIO_SUMMARY = re.compile(r"Test scenario\(_:\) with (\d+) test cases? (?:passed|failed)(?:.* with (\d+) issues?)?")
RUN_END = re.compile(r"Test run with \d+ tests?.* (passed|failed)")
DOC_RULE = re.compile(r"^- `([a-z0-9-]+)`:", re.M)


def anchor(old):
    """A regex for `old` where any whitespace run matches any whitespace run."""
    return re.compile(r"\s+".join(re.escape(part) for part in old.split()))


def sh(args, cwd, log, timeout):
    """Runs a command with its output in the file `log`. Returns (exit code or None on timeout, output)."""
    with open(log, "wb") as out:
        try:
            code = subprocess.run(args, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            code = None
    return code, Path(log).read_text(errors="replace")


def prepare(source, workdir):
    """Clones or refreshes the private copy at the caller's HEAD; keeps .build between runs."""
    repo = workdir / "repo"
    if repo.resolve() == source.resolve():
        sys.exit("mutation-check: --workdir must not be the repository itself")
    workdir.mkdir(parents=True, exist_ok=True)
    if not (repo / ".git").exists():
        subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(source), str(repo)], check=True)
    subprocess.run(["git", "fetch", "--quiet", str(source), "HEAD"], cwd=repo, check=True)
    # reset + clean (not -x): leftovers of an interrupted run go, the ignored .build stays.
    subprocess.run(["git", "reset", "--quiet", "--hard", "FETCH_HEAD"], cwd=repo, check=True)
    subprocess.run(["git", "clean", "-fdq"], cwd=repo, check=True)
    # Package.resolved is ignored by git: reuse the caller's pins so the clone resolves the same
    # versions from SwiftPM's cache (read only; nothing is written to the caller's tree).
    if (source / "Package.resolved").exists():
        shutil.copyfile(source / "Package.resolved", repo / "Package.resolved")
    head = subprocess.run(
        ["git", "log", "-1", "--format=%h %s"], cwd=repo, check=True, stdout=subprocess.PIPE, text=True
    ).stdout.strip()
    return repo, head


def test_product(repo):
    """`swift build --product <name>PackageTests` builds only what the test bundle links (no service
    executables); on Linux every test target shares that one bundle."""
    name = re.search(r'Package\(\s*name:\s*"([^"]+)"', (repo / "Package.swift").read_text())
    return name.group(1) + "PackageTests"


def mutated_texts(repo, entry):
    """The entry's edits applied in order: file -> its mutated text. Raises Stale when an expected
    scenario or an edited file is gone, or an old text is not in its file exactly once."""
    scenarios = repo / "Scenarios"
    missing = [name for name in entry["expect"] if name.endswith(".json") and not (scenarios / name).exists()]
    if missing:
        raise Stale("scenario gone: " + ", ".join(missing))
    mutated = {}
    for file, old, new in entry["edits"]:
        path = repo / file
        if not path.exists():
            raise Stale(f"{file} is gone")
        text = mutated.get(file, path.read_text())
        hits = list(anchor(old).finditer(text))
        if len(hits) != 1:
            where = "not found" if not hits else f"found {len(hits)} times"
            raise Stale(f"old text {where} in {Path(file).name}: {old.splitlines()[0][:60]}")
        mutated[file] = text[: hits[0].start()] + new + text[hits[0].end() :]
    return mutated


def check_table(repo, entries=None, untargeted=None):
    """Without building: the problems that would make entries STALE or MISSING (rule ids against
    docs/concepts/attribution-rules.md, scenario files, edited files and their old texts), and
    untargeted scenarios that are gone or that an entry does expect. Default: `repo`'s own table."""
    if entries is None:
        entries, untargeted = load_table(repo)
    doc_rules = set(DOC_RULE.findall((repo / "docs/concepts/attribution-rules.md").read_text()))
    problems = [
        f"{e['rule']}: rule id not in docs/concepts/attribution-rules.md" for e in entries if e["rule"] not in doc_rules
    ]
    problems += [f"{rule}: no entry in {TABLE}" for rule in sorted(doc_rules - {e["rule"] for e in entries})]
    for entry in entries:
        if "skip" not in entry:
            try:
                mutated_texts(repo, entry)
            except Stale as stale:
                problems.append(f"{entry['rule']}: {stale}")
    # Every scenario is one an entry must kill, or declared untargeted with its reason.
    expected = {name for entry in entries for name in entry.get("expect", [])}
    scenarios = {path.name for path in (repo / "Scenarios").glob("*.json")}
    untargeted = untargeted or {}
    problems += [
        f"{name}: no entry expects it to fail and {TABLE} says not why"
        for name in sorted(scenarios - expected - untargeted.keys())
    ]
    problems += [f"{name}: declared untargeted but gone" for name in sorted(untargeted.keys() - scenarios)]
    problems += [
        f"{name}: declared untargeted but an entry expects it" for name in sorted(untargeted.keys() & expected)
    ]
    return problems


class Runner:
    def __init__(self, repo, logs, timeout):
        self.repo, self.logs, self.timeout = repo, logs, timeout
        self.product = test_product(repo)
        self.cache = {}  # edits -> result, so identical mutations listed under several rules run once

    def build_and_test(self, label):
        """Returns (status, failed scenarios -> first message, detail)."""
        code, text = sh(
            ["swift", "build", "--product", self.product],
            self.repo,
            self.logs / f"{label}.build.log",
            timeout=self.timeout,
        )
        if code != 0:
            errors = [line for line in text.splitlines() if "error:" in line]
            return "BUILD-FAIL", {}, (errors[0] if errors else f"swift build exited {code}").strip()[-160:]
        # `swift test` now and then drops a run of its console lines (seen on this loaded 2-core machine,
        # with a pipe and with a file alike), which would make a failed scenario look passed. `test`
        # notices (issue lines vs the summary's issue count) and reports CRASH; try again, up to 3 times.
        for attempt in (1, 2, 3):
            result = self.test(label, attempt)
            if result[0] != "CRASH" or "timed out" in result[2]:
                break
        return result

    def test(self, label, attempt):
        code, text = sh(
            ["swift", "test", "--skip-build", "--filter", "ScenarioRuleTests"],
            self.repo,
            self.logs / f"{label}.test{attempt}.log",
            timeout=self.timeout,
        )
        failed, issues = {}, 0
        for line in text.splitlines():
            if m := ISSUE.search(line):
                failed.setdefault(m.group(1), "")
                issues += 1
            elif (m := DETAIL.match(line)) and not failed.get(m.group(1)):
                failed[m.group(1)] = m.group(2)
        end, summary = RUN_END.search(text), SCENARIO_SUMMARY.search(text)
        if not end or not summary:
            return "CRASH", failed, "test process timed out" if code is None else f"test process died (exit {code})"
        # Every issue the summary counts must have been read, and every scenario file must have run.
        cases, counted = int(summary.group(1)), int(summary.group(2) or 0)
        files = len(list((self.repo / "Scenarios").glob("*.json")))
        if issues != counted or cases != files:
            return "CRASH", failed, f"incomplete output: {issues}/{counted} issues, {cases}/{files} scenarios"
        return "RAN", failed, end.group(1)

    def unit_test_fails(self, name, label):
        """Whether the test function `name` fails (or its process dies) on the mutated tree."""
        code, text = sh(
            ["swift", "test", "--skip-build", "--filter", name],
            self.repo,
            self.logs / f"{label}.{name}.log",
            timeout=self.timeout,
        )
        end = RUN_END.search(text)
        return end is None or end.group(1) == "failed" or code != 0

    def mutate(self, index, entry):
        """Applies the entry's edits, builds, tests, restores. Returns (status, detail)."""
        try:
            mutated = mutated_texts(self.repo, entry)
        except Stale as stale:
            return "STALE", str(stale)
        tests = [name for name in entry["expect"] if not name.endswith(".json")]
        originals = {file: (self.repo / file).read_text() for file in mutated}
        key = tuple(entry["edits"])
        if key not in self.cache:
            try:
                for file, text in mutated.items():
                    (self.repo / file).write_text(text)
                label = f"{index:02d}-{entry['rule']}"
                status, failed, detail = self.build_and_test(label)
                if status == "RAN":
                    failed = dict(failed)
                    for test in tests:
                        if self.unit_test_fails(test, label):
                            failed[test] = ""
                self.cache[key] = (status, failed, detail)
            finally:
                for file, text in originals.items():
                    (self.repo / file).write_text(text)
        status, failed, detail = self.cache[key]
        if status != "RAN":
            return status, detail
        survivors = [name for name in entry["expect"] if name not in failed]
        others = len(set(failed) - set(entry["expect"]))
        if survivors:
            return "WEAK", "still passing: " + ", ".join(survivors) + (f" ({others} others failed)" if others else "")
        return "PASS", f"{len(entry['expect'])}/{len(entry['expect'])} expected failed (+{others} others)"


def main():
    repository = Path(__file__).resolve().parent.parent
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", action="append", metavar="RULE", help="run only this rule id (repeatable)")
    parser.add_argument("--list", action="store_true", help="print the mutation table and exit")
    parser.add_argument(
        "--check", action="store_true", help="check the table against the code without building (the test command)"
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=Path(os.environ.get("TMPDIR") or tempfile.gettempdir()) / "attribution-mutation",
        help="private clone and build cache (default: $TMPDIR/attribution-mutation)",
    )
    parser.add_argument("--source", type=Path, default=repository, help="repository to clone (default: this one)")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per build or test run")
    args = parser.parse_args()

    doc_rules = DOC_RULE.findall((args.source / "docs/concepts/attribution-rules.md").read_text())
    declared, untargeted = load_table(args.source)
    entries = declared
    if args.only:
        unknown = set(args.only) - {e["rule"] for e in declared}
        if unknown:
            sys.exit(f"mutation-check: no entry for {', '.join(sorted(unknown))}; rules: {', '.join(doc_rules)}")
        entries = [e for e in declared if e["rule"] in args.only]

    if args.check:
        problems = check_table(args.source)
        for problem in problems:
            print(f"mutation-check: {problem}")
        print(f"mutation-check: {len(declared)} entries, {len(problems)} stale or missing")
        return 1 if problems else 0

    if args.list:
        for e in entries:
            if "skip" in e:
                print(f"{e['rule']:30} SKIP  {e['skip']}")
            else:
                files = ", ".join(sorted({Path(f).name for f, _, _ in e["edits"]}))
                print(f"{e['rule']:30} {e['what']}  [{files}]  -> {', '.join(e['expect'])}")
        return 0

    started = time.monotonic()
    repo, head = prepare(args.source.resolve(), args.workdir.resolve())
    logs = args.workdir.resolve() / "logs"
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir()
    print(f"mutation-check: clone {repo} at {head}", flush=True)
    runner = Runner(repo, logs, args.timeout)

    # The unmutated tree must pass, or every result below would mean nothing.
    t = time.monotonic()
    print("baseline: building (the first build in a fresh workdir takes minutes) ...", flush=True)
    status, failed, detail = runner.build_and_test("00-baseline")
    if status != "RAN" or failed or detail != "passed":
        print(f"baseline: {status} {detail} {', '.join(sorted(failed))}; logs in {logs}")
        return 2
    print(f"baseline: every scenario passes ({time.monotonic() - t:.0f}s)", flush=True)

    rows = []
    doc_text = (repo / "docs/concepts/attribution-rules.md").read_text()
    clone_rules = set(DOC_RULE.findall(doc_text))
    for index, e in enumerate(entries, 1):
        t = time.monotonic()
        prefix = f"[{index:2d}/{len(entries)}] {e['rule']}: {e.get('what', 'skipped')}"
        print(prefix + " ...", flush=True)
        if e["rule"] not in clone_rules:
            status, detail = "STALE", "rule id not in docs/concepts/attribution-rules.md"
        elif "skip" in e:
            status, detail = "SKIP", e["skip"]
        else:
            status, detail = runner.mutate(index, e)
        print(f"        {status} {detail} ({time.monotonic() - t:.0f}s)", flush=True)
        rows.append((e["rule"], e.get("what", "-"), status, detail))
    if not args.only:
        for rule in sorted(clone_rules - {e["rule"] for e in declared}):
            rows.append((rule, "-", "MISSING", f"no entry in {TABLE}"))

    table = ["| rule | mutation | result | detail |", "|---|---|---|---|"]
    table += [f"| `{r}` | {w} | {s} | {d.replace('|', '/')} |" for r, w, s, d in rows]
    counts = {s: sum(1 for row in rows if row[2] == s) for s in dict.fromkeys(row[2] for row in rows)}
    elapsed = time.monotonic() - started
    summary = ", ".join(f"{n} {s}" for s, n in counts.items())
    footer = f"{len(rows)} entries: {summary}. Commit {head.split()[0]}, {elapsed / 60:.1f} min."
    print("\n" + "\n".join(table) + "\n\n" + footer)
    if not args.only:
        print("Scenarios no entry expects to fail (reasons in the table): " + (", ".join(untargeted) or "none") + ".")
    (args.workdir.resolve() / "last-summary.md").write_text("\n".join(table) + "\n\n" + footer + "\n")
    return 0 if all(s in ("PASS", "SKIP") for _, _, s, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
