"""The hostile-input run's own logic: its command line (read when run, not when imported), what counts
as problem JSON, raw HTTP answers, crash sites, streams read back as JSON (`attribution stream` on a real Redis), the fuzzer's failure
entries, and which deterministic requests it leaves to the Swift corpus (HostileInputTests)."""

import contextlib
import importlib
import io
import json
import os
import pkgutil
import shutil
import sys
import tempfile
import time
import types
import unittest
from unittest import mock

from cryptography.hazmat.primitives.asymmetric import ec

import hostile
from harness import Processes, RedisConnection, free_port, partitioned, start_redis, until
from hostile import access, streams
from hostile.fuzz import failure_entry
from hostile.http_client import parse_raw_response, request_bytes
from hostile.monitor import Supervisor, crash_site
from hostile.observations import Observations, problem_json_defect
from hostile.run import parse_arguments
from hostile.state import Target
from tests import support

PROBLEM = {"content-type": "application/problem+json"}


class CommandLineTests(unittest.TestCase):
    def test_importing_reads_no_arguments(self):
        # A command line the run would refuse: importing every module must not read it.
        with mock.patch.object(sys, "argv", ["hostile", "--no-such-option"]):
            for module in pkgutil.iter_modules(hostile.__path__, "hostile."):
                if module.name != "hostile.__main__":
                    importlib.import_module(module.name)

    def test_the_options_and_their_defaults(self):
        options = parse_arguments(["bin", "out", "--skip-fuzz", "--hold", "4"])
        self.assertEqual((options.bin, options.out, options.skip_fuzz, options.hold), ("bin", "out", True, 4.0))
        self.assertEqual((options.idle, options.examples, options.seed), (800, 40, 10))


class ProblemJSONTests(unittest.TestCase):
    def test_a_problem_for_the_status_on_the_wire(self):
        body = b'{"type":"about:blank","title":"Bad Request","status":400,"reason":"invalid-json"}'
        self.assertIsNone(problem_json_defect(400, {"content-type": "application/problem+json; charset=utf-8"}, body))

    def test_what_is_wrong(self):
        self.assertIn("content-type 'missing'", problem_json_defect(400, {}, b""))
        self.assertIn(
            "content-type 'application/json'", problem_json_defect(400, {"content-type": "application/json"}, b"{}")
        )
        self.assertIn("not JSON", problem_json_defect(400, PROBLEM, b"<html>"))
        self.assertEqual(problem_json_defect(400, PROBLEM, b'{"type":"x","status":400}'), "missing title")
        body = b'{"type":"x","title":"t","status":413}'
        self.assertEqual(problem_json_defect(400, PROBLEM, body), "status 413 in the body, 400 on the wire")


class ObservationTests(unittest.TestCase):
    def test_expectations_reasons_and_protocol_level_answers(self):
        seen = Observations()
        body = b'{"type":"x","title":"t","status":413,"reason":"body-too-large"}'
        self.assertEqual(
            seen.observe("oversized", "a", 413, PROBLEM, body, expect=(413, "body-too-large")), "body-too-large"
        )
        seen.observe("oversized", "b", 400, PROBLEM, body.replace(b"413", b"400"), expect={413})
        seen.observe("headers", "c", 400, {}, b"", protocol_level=True)
        seen.observe("auth", "d", 401, {}, b"", expect=401)
        self.assertEqual(seen.inputs, {"oversized": 2, "headers": 1, "auth": 1})
        self.assertEqual([u["case"] for u in seen.unexpected], ["b"])
        self.assertEqual([f["case"] for f in seen.findings], ["c"])  # the HTTP parser's bare 400
        self.assertEqual([n["case"] for n in seen.not_problem_json], ["d"])  # a route's bare 401

    def test_what_ingest_accepted_from_hostile_requests_awaits_a_verdict(self):
        seen = Observations()
        seen.observe("replay", "again", 202, {}, b'{"event-identifier":"e1"}')
        seen.observe("fuzz-anonymous-public", "POST /v1/impressions", 202, {}, b'{"event-identifier":"e2"}')
        seen.observe("malformed", "x", 502, {}, b"")
        self.assertEqual(seen.hostile_event_ids, {"e1": "replay: again"})  # the fuzzer's come from its HAR
        self.assertEqual(len(seen.answers), 2)
        self.assertEqual(len(seen.five_xx), 1)


class RawHTTPTests(unittest.TestCase):
    def test_the_first_answer_only(self):
        data = b"HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/problem+json\r\nContent-Length: 2\r\n\r\n{}HTTP/1.1 200"
        self.assertEqual(
            parse_raw_response(data), (413, {"content-type": "application/problem+json", "content-length": "2"}, b"{}")
        )

    def test_nothing_or_not_http(self):
        self.assertEqual(parse_raw_response(b""), (None, {}, b""))
        self.assertEqual(parse_raw_response(b"\x15\x03\x01"), (None, {}, b"\x15\x03\x01"))

    def test_requests_name_ingest_as_host(self):
        target = Target(1, 2, 3, 4, "token", None, "ak", "fk")
        self.assertEqual(
            request_bytes(target, "POST", "/v1/impressions", b"{}", {"X-A": "b"}),
            b"POST /v1/impressions HTTP/1.1\r\nHost: 127.0.0.1:1\r\nX-A: b\r\nContent-Length: 2\r\n\r\n{}",
        )


class CrashSiteTests(unittest.TestCase):
    def test_the_runtime_message_and_our_first_frame(self):
        log = (
            "started\n*** Swift runtime failure: arithmetic overflow ***\n"
            "Thread 3 crashed:\n"
            "0 [ra] 0x00007f1 Swift runtime failure in libswiftCore.so\n"
            "1 [ra] [inlined] 0x0000561 ImpressionRules.check() in verifier at /work/main/Shared/Rules.swift:42:17\n"
        )
        self.assertEqual(
            crash_site(log),
            "Swift runtime failure: arithmetic overflow — ImpressionRules.check() in verifier at /work/main/Shared/Rules.swift:42:17",
        )

    def test_an_exit_without_a_backtrace(self):
        self.assertEqual(crash_site("shutting down\n"), "")


class SupervisorTests(unittest.TestCase):
    def test_each_crash_is_read_from_its_own_start_then_restarted(self):
        with tempfile.TemporaryDirectory() as out, contextlib.redirect_stdout(io.StringIO()):
            processes = Processes(out)
            # A service that crashes at once, somewhere else each time it starts; its log is appended to.
            count = os.path.join(out, "count")
            script = (
                f"n=$(cat {count} 2>/dev/null || echo 0); echo $((n + 1)) > {count}; "
                'echo "*** Program crashed: start $n ***"; echo "Thread 0 crashed:"; '
                'echo "0 0x00000000000010 main() in verifier at /work/main/V.swift:$n:1"; exit 3'
            )
            processes.start("verifier", ["sh", "-c", script])
            supervisor = Supervisor(types.SimpleNamespace(processes=processes, phase="oversized"), ["verifier"], 1)
            supervisor.start()
            try:
                self.assertTrue(until(lambda: len(supervisor.crashes) == 2, seconds=10))
                time.sleep(1.2)  # given up after one restart: not counted again
            finally:
                supervisor.stop.set()
                supervisor.join()
                processes.stop_all()
        self.assertEqual(
            [(c["site"], c["exit_code"], c["phase"]) for c in supervisor.crashes],
            [
                ("Program crashed: start 0 — main() in verifier at /work/main/V.swift:0:1", 3, "oversized"),
                ("Program crashed: start 1 — main() in verifier at /work/main/V.swift:1:1", 3, "oversized"),
            ],
        )


@unittest.skipUnless(shutil.which("redis-server"), "needs redis-server")
class StreamsTests(unittest.TestCase):
    def test_messages_come_back_as_json_envelopes_through_the_tool(self):
        support.use_built_binaries()
        refusal = {
            "type": "event.rejected",
            "id": "r1",
            "time": 1,
            "schema": 1,
            "body": {"reason": "invalid-signature", "detail": "x", "event-identifier": "e1"},
        }
        with tempfile.TemporaryDirectory() as directory:
            processes, port = Processes(directory), free_port()
            try:
                start_redis(processes, port, directory, aof=False)
                connection = RedisConnection(port)
                connection.pipeline(
                    [
                        ("XADD", partitioned("rejected")[0], "1-0", "e", json.dumps(refusal)),
                        ("XADD", partitioned("verified")[2], "2-0", "e", "no message"),
                    ]
                )
                connection.close()
                self.assertEqual(streams.envelopes(port, "rejected"), [refusal])
                self.assertEqual(streams.envelopes(port, "verified")[0]["type"], "undecodable")
                self.assertEqual(streams.verdicts_so_far(port), {"e1", None})
            finally:
                processes.stop_all()


class FuzzFailureTests(unittest.TestCase):
    def test_a_failure_as_the_report_lists_it(self):
        check = {"name": "not_a_server_error"}
        failure = {"code": "server_error", "title": "Server error", "message": "500"}
        interaction = {
            "request": {"method": "POST", "uri": "http://h/v1/x", "body": {"$base64": "e30="}},
            "response": {"status_code": 500, "content": {"$base64": "b29wcw=="}},
        }
        entry = failure_entry(check, failure, "POST /v1/x", interaction)
        self.assertTrue(entry["hard"])
        self.assertEqual(
            (entry["request"], entry["request_body"], entry["response"]), ("POST http://h/v1/x", "{}", "500 oops")
        )


class SwiftOwnedCasesTests(unittest.TestCase):
    """What the Swift corpus sends with the same expectation is not sent again; the rest still is."""

    class Recorder:
        """A run that answers every request 400 (the allow-listed receiver 200) and records what was sent."""

        def __init__(self):
            self.target = Target(1, 2, 3, 4, "admin-token", ec.generate_private_key(ec.SECP256R1()), "ak", "fk")
            self.seen = Observations()
            self.cases, self.bodies = [], []

        def call(self, category, case, method, path, body=None, headers=None, expect=None, protocol_level=False):
            self.cases.append(case)
            return 400, b"{}"

        def http(self, method, path, body=None, headers=None, timeout=30, port=None):
            self.bodies.append(body)
            if body.get("postback-url") == f"http://127.0.0.1:{self.target.receiver_port}/postbacks":
                return 200, {"content-type": "application/json"}, b"{}"
            return 400, PROBLEM, b'{"reason":"destination-private-address"}'

    def test_only_dns_only_names_are_registered(self):
        run = self.Recorder()
        access.postback_urls(run)
        urls = [b["postback-url"] for b in run.bodies]
        self.assertEqual(len(urls), 7)  # six names only DNS makes private, and the control
        self.assertIn("https://metadata.google.internal/computeMetadata/v1/", urls)
        self.assertFalse(any("169.254" in url or "ftp:" in url for url in urls), urls)
        self.assertEqual(run.seen.unexpected, [])  # every name refused with 400 here, the control accepted
        self.assertEqual(run.seen.findings, [])


if __name__ == "__main__":
    unittest.main()
