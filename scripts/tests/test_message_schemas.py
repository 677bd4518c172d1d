"""The message validator's own logic: its list of streams held to the project's catalog (so a new
stream is never left unchecked), and how it judges an envelope, an `attribution stream` line, an entry
it could not read and a message that breaks its schema."""

import json
import unittest

import harness
import message_schemas
from tests import support

REFUSAL = {
    "type": "event.rejected",
    "id": "r1",
    "time": 1,
    "schema": 1,
    "body": {"reason": "invalid-signature", "detail": "x", "event-identifier": "e1"},
}


class StreamListTests(unittest.TestCase):
    def test_the_streams_read_are_the_catalogs_streams_and_dead_letters(self):
        support.use_built_binaries()
        catalog = harness.catalog()
        names = set(catalog["streams"].values()) | {group["dead-letters"] for group in catalog["groups"]}
        self.assertEqual(set(message_schemas.STREAMS), names)


class LineTests(unittest.TestCase):
    schemas = message_schemas.Schemas()

    def problems(self, line):
        return message_schemas.line_problems(self.schemas, json.dumps(line))

    def test_a_valid_envelope_alone_or_in_a_stream_line(self):
        self.assertEqual(self.problems(REFUSAL), [])
        self.assertEqual(self.problems({"stream": "rejected:{p02}", "entry": "1-0", "message": REFUSAL}), [])
        stored = {"stream": "rejected:{p02}", "entry": "1-0", "stored": "json", "message": REFUSAL}
        self.assertEqual(self.problems(stored), [])

    def test_a_message_stored_in_a_binary_form_is_a_problem_though_it_reads(self):
        compact = {"stream": "verified:{p02}", "entry": "1-0", "stored": "compact", "message": REFUSAL}
        self.assertEqual(self.problems(compact), ["verified:{p02} 1-0: stored as compact, not JSON"])

    def test_an_entry_without_a_message_read_is_a_problem_one_with_fields_only_is_not(self):
        unread = {"stream": "verified:{p02}", "entry": "2-0", "undecodable": "not JSON", "raw": "eA=="}
        self.assertEqual(self.problems(unread), ["verified:{p02} 2-0: no message read: not JSON"])
        fields_only = {"stream": "deliveries:dead:{p02}", "entry": "3-0", "fields": {"error": "HTTP 500"}}
        self.assertEqual(self.problems(fields_only), [])

    def test_a_broken_message_and_an_unknown_type_are_named(self):
        broken = {**REFUSAL, "body": {**REFUSAL["body"], "reason": "no-such-reason"}}
        self.assertEqual(len(self.problems(broken)), 1)
        self.assertIn("body/reason", self.problems(broken)[0])
        self.assertEqual(self.problems({**REFUSAL, "type": "event.unknown"}), ["no schema for type 'event.unknown'"])


if __name__ == "__main__":
    unittest.main()
