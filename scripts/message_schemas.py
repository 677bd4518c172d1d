#!/usr/bin/env python3
"""The stream messages against their published JSON Schemas (docs/reference/messages/, draft 2020-12),
with Python's `jsonschema`: an independent validator, not the pipeline's own decoder.

    python3 scripts/message_schemas.py FILE ...            # JSON lines: envelopes, or `attribution stream` lines
    python3 scripts/message_schemas.py --bin DIR --redis-url URL   # every entry of every stream, read back as JSON

Each message is validated against the schema its `type` names; an unknown type, an entry with no
message the pipeline can read, or a message that breaks its schema is a problem. Exits 1 when there is
one, after listing them."""

import argparse
import json
import sys
from pathlib import Path

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

SCHEMAS = Path(__file__).resolve().parent.parent / "docs" / "reference" / "messages"
# The streams `attribution stream` reads: the path's, the refusals and every dead-letter stream.
STREAMS = [
    "events",
    "verified",
    "rejected",
    "winner:settled",
    "attributions",
    "scheduler:timers",
    "postbacks",
    "verifier:dead",
    "attribution-winner:dead",
    "scheduler:dead",
    "dispatcher:dead",
    "deliveries:dead",
]


class Schemas:
    """Every schema of `folder`, by the message type each is for (its `type` constant)."""

    def __init__(self, folder=SCHEMAS):
        documents = [json.loads(path.read_text()) for path in sorted(folder.glob("*.schema.json"))]
        for document in documents:
            Draft202012Validator.check_schema(document)
        registry = Registry().with_resources(
            (document["$id"], Resource.from_contents(document)) for document in documents
        )
        self.validators = {}
        for document in documents:
            constant = document.get("properties", {}).get("type", {}).get("const")
            if constant:
                self.validators[constant] = Draft202012Validator(document, registry=registry)

    def problems(self, message):
        """What is wrong with one message (an empty list when it validates)."""
        if not isinstance(message, dict):
            return [f"not a JSON object: {json.dumps(message)[:80]}"]
        validator = self.validators.get(message.get("type"))
        if validator is None:
            return [f"no schema for type {message.get('type')!r}"]
        return [
            f"{message['type']} {message.get('id')}: {'/'.join(map(str, error.absolute_path)) or '(top)'}: {error.message}"
            for error in sorted(validator.iter_errors(message), key=lambda error: list(map(str, error.path)))
        ]


def line_problems(schemas, line):
    """Problems of one JSON line: an envelope, or an `attribution stream` line holding one (whose
    message must be stored as JSON, not in one of 0.1.0's binary forms)."""
    entry = json.loads(line)
    if "entry" in entry and "stream" in entry:
        where = f"{entry['stream']} {entry['entry']}"
        if "message" not in entry:
            if "undecodable" in entry:
                return [f"{where}: no message read: {entry['undecodable']}"]
            return []  # an entry without a message field (a delivery's dead letter holds only fields)
        stored = [] if entry.get("stored", "json") == "json" else [f"{where}: stored as {entry['stored']}, not JSON"]
        return stored + [f"{where}: {problem}" for problem in schemas.problems(entry["message"])]
    return schemas.problems(entry)


def validate_streams(redis_url, *options, schemas=None):
    """Every entry of every stream, read back with `attribution stream` (harness.use_binaries first;
    `options`: the tool's, `--cluster`): (entries read, problems)."""
    import harness

    schemas = schemas or Schemas()
    count, problems = 0, []
    for stream in STREAMS:
        for line in harness.stream_lines(redis_url, stream, *options):
            count += 1
            problems += line_problems(schemas, json.dumps(line))
    return count, problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="*", help="files of JSON lines (envelopes or `attribution stream` lines)")
    parser.add_argument("--bin", help="the built executables (`attribution`), to read a pipeline's streams")
    parser.add_argument("--redis-url", help="a pipeline's Redis: validate every entry of every stream")
    parser.add_argument("--cluster", action="store_true", help="that Redis is a Redis Cluster")
    parser.add_argument("--streams", action="store_true", help="print the names of the streams read, and exit")
    args = parser.parse_args(argv)
    if args.streams:
        print(" ".join(STREAMS))
        return 0
    if bool(args.bin) != bool(args.redis_url) or not (args.files or args.redis_url):
        parser.error("give FILE ..., or --bin and --redis-url together")
    schemas, count, problems = Schemas(), 0, []
    for name in args.files:
        for line in Path(name).read_text().splitlines():
            if line.strip():
                count += 1
                problems += line_problems(schemas, line)
    if args.redis_url:
        import harness

        harness.use_binaries(args.bin)
        read, found = validate_streams(args.redis_url, *(["--cluster"] if args.cluster else []), schemas=schemas)
        count, problems = count + read, problems + found
    for problem in problems:
        print(problem)
    print(f"{count} messages, {len(problems)} problems ({len(schemas.validators)} message types)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
