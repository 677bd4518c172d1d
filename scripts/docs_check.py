"""Runs the documentation's examples, so that the docs cannot drift from the code: the sh blocks of
the getting-started walk-through in one bash, in order, and, while its services still run, the postback
verification examples of the ad networks' page against the postbacks its receiver recorded (each
accepted, with the role of the key that signed it: the walk-through's development postback and its
test postback) and a tampered copy of the first (refused).

    python3 scripts/docs_check.py --bin .build/debug     # the walk-through, with the examples
    python3 scripts/docs_check.py examples --postbacks FILE --jwks-url URL   # the examples alone

Markdown is read as the docs write it: ATX headings (`## …`) and fenced code blocks (``` or ~~~)."""

import argparse
import base64
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import NamedTuple

from harness import b64url_decode, free_port

ROOT = Path(__file__).resolve().parents[1]
WALKTHROUGH = (ROOT / "docs/getting-started.md", "A first postback with curl")
EXAMPLES = (ROOT / "docs/integrating/ad-networks.md", "Verifying postbacks with the JWKS")
# Each example's language (its fence's info string), the file it is saved as and how it is run.
RUNNERS = {"python": ("verify_postback.py", [sys.executable]), "js": ("verify-postback.mjs", ["node"])}
# The role each example must print for a postback, by its kid (the defaults; a generated key's kid has
# "-" and 8 hex digits appended), and the roles the walk-through's postbacks must cover.
ROLES = {
    "attribution-pipeline/0": "production",
    "attribution-pipeline-development/0": "development",
    "attribution-pipeline-test/0": "test",
}
WALKTHROUGH_ROLES = {"development", "test"}
# The walk-through's ports, each moved to a free one so that the check never meets another run's.
PORTS = ("REDIS_PORT", "INGEST_PORT", "OPERATIONS_PORT", "ADMIN_PORT", "RECEIVER_PORT")

HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})[ \t]*([^`\s]*)")
# What bash prints before each block (and after the last) so that the output can be told apart.
MARK = "\x1edocs-check "


class Block(NamedTuple):
    language: str
    text: str
    line: int  # the opening fence's, counted from 1; 0 for a block the check adds


def where(block):
    return f"line {block.line}" if block.line else "added by the docs check"


def shown(path):
    """A path as the repository names it, where it is in the repository."""
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


class Heading(NamedTuple):
    level: int
    title: str
    index: int  # the line's, counted from 0


def parse(markdown):
    """The headings and code blocks of a Markdown text; a `#` line inside a block (a shell comment) is
    no heading."""
    headings, blocks = [], []
    fence = None  # (indent, marker, language, first line) of the open block
    body = []
    for index, line in enumerate(markdown.splitlines()):
        if fence is None:
            if opening := FENCE.match(line):
                fence, body = (len(opening[1]), opening[2], opening[3], index), []
            elif heading := HEADING.match(line):
                headings.append(Heading(len(heading[1]), heading[2], index))
        elif re.fullmatch(rf" {{0,3}}{re.escape(fence[1][0])}{{{len(fence[1])},}}[ \t]*", line):
            blocks.append(Block(fence[2], "".join(f"{text}\n" for text in body), fence[3] + 1))
            fence = None
        else:
            # Content loses as much indentation as its opening fence had (CommonMark's rule).
            body.append(re.sub(rf"^ {{0,{fence[0]}}}", "", line))
    return headings, blocks


def section_blocks(markdown, title, language=None):
    """The code blocks (of one language, or all) from the heading `title` to the next heading of the
    same or a higher level, its subsections included."""
    headings, blocks = parse(markdown)
    matches = [heading for heading in headings if heading.title == title]
    if len(matches) != 1:
        raise LookupError(f"{len(matches)} headings are titled {title!r}")
    start = matches[0]
    end = next((h.index for h in headings if h.index > start.index and h.level <= start.level), None)
    return [
        block
        for block in blocks
        if block.line - 1 > start.index
        and (end is None or block.line - 1 < end)
        and (language is None or block.language == language)
    ]


def script(blocks, diagnostics=None):
    """One bash script running `blocks` in order, marking each one's start and the end of the last;
    `diagnostics` (shell) runs when a block fails, e.g. to show the logs of what the blocks started."""
    lines = []
    if diagnostics:
        lines += [
            f"docs_check_diagnostics() {{\n{diagnostics}\n}}",
            f'trap \'docs_check_status=$?; [ $docs_check_status -eq 0 ] || {{ printf "{MARK}diagnostics\\n";'
            " docs_check_diagnostics || true; }; exit $docs_check_status' EXIT",
        ]
    for number, block in enumerate(blocks, 1):
        lines += [f"printf '{MARK}block {number}\\n'", block.text.rstrip("\n")]
    lines.append(f"printf '{MARK}end\\n'")
    return "\n".join(lines) + "\n"


def session_processes(session):
    """The live processes of a session: pid → command line (the blocks' background jobs outlive bash)."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
            if fields[0] != "Z" and int(fields[3]) == session:
                found[int(stat.parent.name)] = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
    return found


def end_session(session, grace=5):
    """Stops every process of the session: SIGTERM, then SIGKILL after `grace` seconds. What was
    still running."""
    left = session_processes(session)
    deadline = time.monotonic() + grace
    # Bounded, for a process that not even SIGKILL ends (stuck in the kernel).
    while (members := session_processes(session)) and time.monotonic() < deadline + 5:
        for pid in members:
            try:
                os.kill(pid, signal.SIGTERM if time.monotonic() < deadline else signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)
    return left


class Run:
    """What running the blocks gave: each block's output, the last block started, how bash ended."""

    def __init__(self, blocks, out):
        self.blocks, self.out = blocks, out
        self.outputs = [""] * len(blocks)
        self.current, self.finished, self.diagnosing, self.diagnostics = 0, False, False, ""
        self.exit_status, self.timed_out, self.left_running = None, False, {}

    def read(self, stream):
        """Shows each block as it starts and its output as it comes, keeping the output per block."""
        for raw in stream:
            before, mark, after = raw.decode(errors="replace").partition(MARK)
            self.take(before)
            if not mark:
                continue
            word = after.split()[0] if after.split() else ""
            if word == "block":
                self.current = int(after.split()[1])
                block = self.blocks[self.current - 1]
                self.out.write(f"--- block {self.current}/{len(self.blocks)} ({where(block)})\n{block.text}")
                self.out.write("--- its output\n")
            elif word == "end":
                self.finished = True
            elif word == "diagnostics":
                self.diagnosing = True
            self.out.flush()

    def take(self, text):
        if self.diagnosing:
            self.diagnostics += text
        elif self.current:
            self.outputs[self.current - 1] += text
        self.out.write(text)
        self.out.flush()

    @property
    def ok(self):
        return self.exit_status == 0 and self.finished and not self.left_running

    def report(self, source, timeout):
        """The failure, or None: which block, why, the block and its output."""
        if self.ok:
            return None
        if self.exit_status == 0 and self.finished:
            running = "".join(f"\n  {pid} {command}" for pid, command in sorted(self.left_running.items()))
            return f"{source}: the blocks left processes running (stopped now):{running}"
        block = self.blocks[self.current - 1] if self.current > 0 else None
        why = f"timed out ({timeout:g} s for all blocks)" if self.timed_out else f"exited {self.exit_status}"
        if self.exit_status == 0:
            why = "ended the script (exit 0) before the last block"
        at = f"block {self.current} of {len(self.blocks)} ({where(block)})" if block else "before the first block"
        text = f"{source}: {at} {why}\n"
        if block:
            text += f"--- the block\n{block.text}--- its output\n{self.outputs[self.current - 1]}"
        if self.diagnostics:
            text += f"--- diagnostics\n{self.diagnostics}"
        return text


def run_blocks(blocks, env=None, timeout=120, diagnostics=None, out=sys.stdout):
    """Runs `blocks` in one `bash -euo pipefail` from the repository's root, in a session of its own,
    and stops whatever is left of that session afterwards, also after a failure or a timeout."""
    run = Run(blocks, out)
    command = ["bash", "-e", "-u", "-o", "pipefail", "-c", script(blocks, diagnostics)]
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    reader = threading.Thread(target=run.read, args=(process.stdout,), daemon=True)
    reader.start()
    try:
        run.exit_status = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        run.timed_out = True
    left = end_session(process.pid)
    process.wait()
    # A process that held on to bash's output and outlived it is stopped by now, so the pipe ends.
    reader.join(timeout=10)
    if not reader.is_alive():
        process.stdout.close()
    run.left_running = {pid: command for pid, command in left.items() if pid != process.pid}
    return run


def tampered(body):
    """The postback with its signed `did-win` turned over, its signature kept: a forgery to refuse."""
    header, payload, signature = body["jws-string"].split(".")
    claims = json.loads(b64url_decode(payload))
    claims["did-win"] = not claims["did-win"]
    forged = b64url_encode(json.dumps(claims, separators=(",", ":")).encode())
    return {**body, "jws-string": f"{header}.{forged}.{signature}"}


def b64url_encode(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def role_of(kid):
    """The role the docs give the key `kid`, or None for a kid they do not name."""
    return next((role for name, role in ROLES.items() if kid == name or kid.startswith(name + "-")), None)


def check_example(block, directory, bodies, forged_file, jwks_url):
    """Runs one example on each recorded postback (`bodies`: file, claims, role; it must print the role
    and the claims) and on the forged one (it must refuse it); the failure, or None."""
    name, runner = RUNNERS[block.language]
    path = Path(directory) / name
    path.write_text(block.text)
    try:
        runs = [
            subprocess.run([*runner, path, body, jwks_url], capture_output=True, text=True, timeout=30)
            for body in [*(file for file, _, _ in bodies), forged_file]
        ]
    except FileNotFoundError:
        return f"could not run: {runner[0]} is not installed"
    except subprocess.TimeoutExpired as timeout:
        return f"did not finish in {timeout.timeout:g} s"
    *accepted, refused = runs
    for run, (_, claims, role) in zip(accepted, bodies, strict=True):
        if run.returncode != 0:
            return f"refused a recorded postback (exit {run.returncode}):\n{run.stdout}{run.stderr}"
        try:
            printed = json.loads(run.stdout)
        except ValueError:
            return f"printed no JSON:\n{run.stdout}"
        if printed != {"role": role, "claims": claims}:
            return f"printed {printed}, expected the role {role!r} and the claims the receiver verified, {claims}"
    # "refused" tells a deliberate refusal from a crash, which exits 1 too.
    if refused.returncode == 0 or refused.stdout.strip() or "refused" not in refused.stderr:
        return f"did not refuse a tampered postback (exit {refused.returncode}):\n{refused.stdout}{refused.stderr}"
    roles = ", ".join(role for _, _, role in bodies)
    print(
        f"{block.language} example ({where(block)}): verified {len(bodies)} postbacks ({roles}), "
        f"refused a tampered copy: {refused.stderr.strip()}"
    )
    return None


def check_examples(postbacks, jwks_url, doc=EXAMPLES[0], roles=WALKTHROUGH_ROLES):
    """Each verification example against every postback the walk-through's receiver recorded, which must
    include one signed by each of `roles`; whether all passed."""
    blocks = [block for block in section_blocks(Path(doc).read_text(), EXAMPLES[1]) if block.language in RUNNERS]
    languages = sorted(block.language for block in blocks)
    if languages != sorted(RUNNERS):
        print(f"{shown(doc)}: expected one example in each of {sorted(RUNNERS)}, found {languages}")
        return False
    records = [json.loads(line) for line in Path(postbacks).read_text().splitlines()]
    found = {role_of(record["kid"]) for record in records}
    if not roles <= found:
        print(
            f"{shown(postbacks)}: expected postbacks signed by the keys {sorted(roles)}, found kids {[r['kid'] for r in records]}"
        )
        return False
    failures = 0
    with tempfile.TemporaryDirectory(prefix="docs-check-") as directory:
        bodies = []
        for index, record in enumerate(records):
            body_file = Path(directory) / f"postback-{index}.json"
            body_file.write_text(json.dumps(record["body"]))
            bodies.append((body_file, record["payload"], role_of(record["kid"]) or "unknown"))
        forged_file = Path(directory) / "tampered.json"
        forged_file.write_text(json.dumps(tampered(records[0]["body"])))
        for block in blocks:
            if failure := check_example(block, directory, bodies, forged_file, jwks_url):
                print(f"{shown(doc)} line {block.line}: the {block.language} example {failure}")
                failures += 1
    return failures == 0


def check_walkthrough(bin_dir, doc=WALKTHROUGH[0], examples_doc=EXAMPLES[0], timeout=120):
    """The walk-through's blocks, the examples run just before its last block (which stops the
    services) on the walk-through's WORK and INGEST; whether all passed."""
    blocks = section_blocks(Path(doc).read_text(), WALKTHROUGH[1], "sh")
    if len(blocks) < 2:
        print(f"{shown(doc)}: {WALKTHROUGH[1]!r} has {len(blocks)} sh blocks")
        return False
    examples = shlex.join(
        [sys.executable, str(Path(__file__).resolve()), "examples", "--ad-networks", str(Path(examples_doc).resolve())]
    )
    hook = Block(
        "sh",
        "# the verification examples, while ingest serves the JWKS\n"
        f'{examples} --postbacks "$WORK/postbacks.jsonl" --jwks-url "$INGEST/.well-known/jwks.json"\n',
        0,
    )
    env = {**os.environ, "BIN": str(Path(bin_dir).resolve())} | {name: str(free_port()) for name in PORTS}
    # When a block fails the stop block never runs and its services' logs say why.
    diagnostics = 'tail -n 20 "${WORK:-/nonexistent}"/logs/*.log'
    # The walk-through's WORK (mktemp -d) goes in here, removed even when the stop block never ran.
    with tempfile.TemporaryDirectory(prefix="docs-check-") as temporary:
        env["TMPDIR"] = temporary
        run = run_blocks([*blocks[:-1], hook, blocks[-1]], env=env, timeout=timeout, diagnostics=diagnostics)
    if failure := run.report(shown(doc), timeout):
        print(f"\ndocs check FAILED: {failure}")
        return False
    print(
        f"\ndocs check: the walk-through of {shown(doc)} ({len(blocks)} blocks) and the examples of {shown(examples_doc)} passed"
    )
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", nargs="?", choices=["walkthrough", "examples"], default="walkthrough")
    parser.add_argument("--bin", default=".build/debug", help="the built executables (the walk-through's BIN)")
    parser.add_argument("--timeout", type=float, default=120, help="seconds for the whole walk-through")
    parser.add_argument("--getting-started", default=WALKTHROUGH[0], help="the walk-through's page (or a copy)")
    parser.add_argument("--ad-networks", default=EXAMPLES[0], help="the examples' page (or a copy)")
    parser.add_argument("--postbacks", help="examples: the postbacks a receiver recorded (JSONL)")
    parser.add_argument("--jwks-url", help="examples: the JWKS")
    arguments = parser.parse_args()
    if arguments.what == "examples" and not (arguments.postbacks and arguments.jwks_url):
        parser.error("examples needs --postbacks and --jwks-url")
    if arguments.what == "examples":
        passed = check_examples(arguments.postbacks, arguments.jwks_url, arguments.ad_networks)
    else:
        passed = check_walkthrough(arguments.bin, arguments.getting_started, arguments.ad_networks, arguments.timeout)
    sys.exit(0 if passed else 1)


if __name__ == "__main__":
    main()
