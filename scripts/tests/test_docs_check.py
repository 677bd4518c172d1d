"""How scripts/docs_check.py finds the docs' code blocks, and runs them in one bash whose processes
it stops afterwards."""

import io
import json
import tempfile
import textwrap
import unittest
from pathlib import Path

from docs_check import EXAMPLES, RUNNERS, WALKTHROUGH, Block, run_blocks, section_blocks, tampered
from harness import b64url_decode

PAGE = textwrap.dedent(
    """\
    # Getting started

    ## With docker compose

    ```sh
    docker compose up -d
    ```

    ## A first postback

    Settings first.

    ```sh
    # A shell comment, not a heading: the section goes on.
    BIN=${BIN:-.build/debug}
    ```

    ### The receiver

    ```python
    print("a subsection belongs to its section")
    ```

    - In a list:

      ```sh
      echo indented
      ```

    ````markdown
    ```sh
    echo "a fence inside a longer one is text"
    ```
    ````

    ~~~sh
    echo tilde
    ~~~

    ## Next section

    ```sh
    echo not in the walk-through
    ```
    """
)


class SectionTests(unittest.TestCase):
    def test_from_the_heading_to_the_next_of_the_same_level(self):
        blocks = section_blocks(PAGE, "A first postback")
        self.assertEqual([block.language for block in blocks], ["sh", "python", "sh", "markdown", "sh"])
        self.assertNotIn("not in the walk-through", "".join(block.text for block in blocks))

    def test_a_comment_in_a_block_is_no_heading(self):
        first = section_blocks(PAGE, "A first postback", "sh")[0]
        self.assertEqual(
            first.text, "# A shell comment, not a heading: the section goes on.\nBIN=${BIN:-.build/debug}\n"
        )
        self.assertEqual(first.line, 13)

    def test_one_language(self):
        texts = [block.text for block in section_blocks(PAGE, "A first postback", "sh")]
        self.assertEqual(texts[1:], ["echo indented\n", "echo tilde\n"])

    def test_a_longer_fence_holds_a_shorter_one(self):
        (markdown,) = section_blocks(PAGE, "A first postback", "markdown")
        self.assertEqual(markdown.text, '```sh\necho "a fence inside a longer one is text"\n```\n')

    def test_a_subsection_alone(self):
        blocks = section_blocks(PAGE, "The receiver")
        self.assertEqual(len(blocks), 4)
        self.assertEqual(blocks[0].language, "python")

    def test_the_last_section_runs_to_the_end(self):
        (block,) = section_blocks(PAGE, "Next section")
        self.assertEqual(block.text, "echo not in the walk-through\n")

    def test_a_heading_found_once_or_refused(self):
        with self.assertRaises(LookupError):
            section_blocks(PAGE, "A first postback with curl")
        with self.assertRaises(LookupError):
            section_blocks(PAGE + "\n## Next section\n", "Next section")


class RepositoryDocsTests(unittest.TestCase):
    """The pages the CI check runs: the shape it relies on."""

    def test_the_walkthrough_takes_its_binaries_from_bin(self):
        blocks = section_blocks(WALKTHROUGH[0].read_text(), WALKTHROUGH[1], "sh")
        self.assertIn("BIN=${BIN:-", blocks[0].text)
        self.assertIn("kill $PIDS", blocks[-1].text)
        self.assertIn('rm -rf "$WORK"', blocks[-1].text)

    def test_one_verification_example_per_language(self):
        blocks = section_blocks(EXAMPLES[0].read_text(), EXAMPLES[1])
        self.assertEqual(sorted(block.language for block in blocks if block.language in RUNNERS), sorted(RUNNERS))


def sh(*texts):
    return [Block("sh", text, number) for number, text in enumerate(texts, 1)]


class RunTests(unittest.TestCase):
    def test_variables_carry_over_from_block_to_block(self):
        out = io.StringIO()
        run = run_blocks(sh("GREETING=hello\n", 'echo "$GREETING from $PWD"\n'), out=out)
        self.assertIsNone(run.report("page", 10))
        self.assertEqual(run.outputs, ["", f"hello from {Path(__file__).resolve().parents[2]}\n"])
        self.assertIn("--- block 2/2 (line 2)\necho", out.getvalue())

    def test_the_failing_block_and_its_output(self):
        run = run_blocks(sh("echo one\n", "echo two; false; echo never\n", "echo three\n"), out=io.StringIO())
        report = run.report("page", 10)
        self.assertTrue(report.startswith("page: block 2 of 3 (line 2) exited 1\n"), report)
        self.assertIn("--- its output\ntwo\n", report)
        self.assertNotIn("three", "".join(run.outputs))

    def test_an_unset_variable_and_a_failing_pipe_fail(self):
        for text in ('echo "$NOT_SET"\n', "false | cat\n"):
            self.assertIsNotNone(run_blocks(sh(text), out=io.StringIO()).report("page", 10), text)

    def test_diagnostics_after_a_failure(self):
        run = run_blocks(sh("LOGS=seen\n", "exit 3\n"), diagnostics='echo "logs $LOGS"', out=io.StringIO())
        self.assertEqual(run.exit_status, 3)
        self.assertIn("--- diagnostics\nlogs seen\n", run.report("page", 10))

    def test_what_the_blocks_left_running_is_stopped(self):
        with tempfile.TemporaryDirectory() as directory:
            pid_file = Path(directory) / "pid"
            for blocks in (
                sh(f"sleep 300 &\necho $! >{pid_file}\n"),
                sh(f"sleep 300 &\necho $! >{pid_file}\n", "false\n"),
            ):
                run = run_blocks(blocks, out=io.StringIO())
                pid = int(pid_file.read_text())
                self.assertIn(pid, run.left_running)
                self.assertIn(state(pid), ("", "Z"))
                self.assertIsNotNone(run.report("page", 10))

    def test_a_timeout_names_the_block_and_stops_it(self):
        run = run_blocks(sh("echo quick\n", "sleep 300\n"), timeout=1, out=io.StringIO())
        self.assertTrue(run.report("page", 1).startswith("page: block 2 of 2 (line 2) timed out (1 s for all blocks)"))
        self.assertTrue(run.left_running)
        self.assertTrue(all(state(pid) in ("", "Z") for pid in run.left_running))


def state(pid):
    """A process's state letter (Z for a zombie), or "" once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return ""


class TamperedTests(unittest.TestCase):
    def test_the_signed_claim_turns_over_and_the_signature_stays(self):
        jws = "eyJhbGciOiJFUzI1NiJ9.eyJkaWQtd2luIjp0cnVlfQ.c2lnbmF0dXJl"  # {"did-win":true}, "signature"
        forged = tampered({"jws-string": jws, "conversion-value": 42})
        header, body, signature = forged["jws-string"].split(".")
        self.assertEqual((header, signature), ("eyJhbGciOiJFUzI1NiJ9", "c2lnbmF0dXJl"))
        self.assertEqual(json.loads(b64url_decode(body)), {"did-win": False})
        self.assertEqual(forged["conversion-value"], 42)


if __name__ == "__main__":
    unittest.main()
