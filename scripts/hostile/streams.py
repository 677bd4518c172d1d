"""The pipeline's streams as the run reads them back: every partition of a stream (names from the
project's catalog), its envelopes decoded, the verifier's verdicts so far.

Envelopes between stages are in CompactCoding's binary form (Shared/AttributionModel/Coding): magic
0xF5, version 2 (a key is the varint 2n + 1 for number n of the key table, else 2 × its byte count and
its text), then one tagged value. Decoded into the same dicts json.loads gives for the JSON form; the
magic and the key table come from `attribution catalog --json`."""

import json
import struct

from harness import RedisConnection, RedisError, catalog, partitioned


def connect(port):
    """A connection whose bulk replies are bytes (envelopes are binary); gives up after 30 s of silence."""
    return RedisConnection(port, binary=True, timeout=30)


def command(connection, *arguments):
    """One command's reply; an error reply raises (a run that cannot read Redis cannot judge it)."""
    reply = connection.pipeline([arguments])[0]
    if isinstance(reply, RedisError):
        raise RuntimeError(reply)
    return reply


def compact_decode(raw, coding=None):
    """An envelope in the compact coding as the dict its JSON form would give; `coding`: the catalog's
    `compact-coding` (magic, version, key table), by default the project's."""
    coding = coding or catalog()["compact-coding"]

    def varint(at):
        value, shift = 0, 0
        while True:
            byte = raw[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value, at

    def text(at):
        length, at = varint(at)
        return raw[at : at + length].decode("utf-8"), at + length

    def numbered_key(at):
        code, at = varint(at)
        if code & 1:
            return coding["keys"][code >> 1], at
        return raw[at : at + (code >> 1)].decode("utf-8"), at + (code >> 1)

    def value(at):
        tag = raw[at]
        at += 1
        if tag == 0x00:
            return None, at
        if tag in (0x01, 0x02):
            return tag == 0x02, at
        if tag == 0x03:
            number, at = varint(at)
            return (number >> 1) ^ -(number & 1), at
        if tag == 0x04:
            return varint(at)
        if tag == 0x05:
            return struct.unpack("<d", raw[at : at + 8])[0], at + 8
        if tag in (0x06, 0x09):
            return text(at)
        if tag in (0x07, 0x08):
            end = at + 4 + int.from_bytes(raw[at : at + 4], "little")
            at += 4
            items = [] if tag == 0x07 else {}
            while at < end:
                if tag == 0x07:
                    item, at = value(at)
                    items.append(item)
                else:
                    key, at = numbered_key(at)
                    items[key], at = value(at)
            return items, end
        raise ValueError(f"unknown compact tag {tag:#x}")

    if raw[1] != coding["version"]:
        return {"type": "binary", "raw": raw[:16].hex()}
    return value(2)[0]


def envelope(raw):
    """One entry's `e` field decoded: compact, JSON, or (compact held postbacks) a marker."""
    if raw[:1] == bytes([catalog()["compact-coding"]["magic"]]):
        return compact_decode(raw)
    try:
        return json.loads(raw)
    except ValueError:
        return {"type": "binary", "raw": raw[:16].hex()}


def envelopes(connection, stream):
    """Every entry of every partition of a stream as decoded envelopes ({type, id, time, schema, body})."""
    found = []
    for name in partitioned(stream):
        start = "-"
        while True:
            batch = command(connection, "XRANGE", name, start, "+", "COUNT", 1000)
            for _entry_id, fields in batch:
                found.append(envelope(dict(zip(fields[::2], fields[1::2], strict=False)).get(b"e", b"")))
            if len(batch) < 1000:
                break
            start = "(" + batch[-1][0].decode()
    return found


def entries(connection, stream):
    """Every raw (id, fields) entry of every partition of a stream."""
    return [entry for name in partitioned(stream) for entry in command(connection, "XRANGE", name, "-", "+")]


def length(connection, stream):
    """Entries in a stream now, summed over its partitions."""
    return sum(command(connection, "XLEN", name) for name in partitioned(stream))


def verdicts_so_far(port):
    """Ids the verifier has decided (verified or rejected) so far; cheap enough for the replay loop."""
    connection = connect(port)
    try:
        ids = {e.get("id") for e in envelopes(connection, "verified")}
        ids |= {e.get("body", {}).get("event-identifier") for e in envelopes(connection, "rejected")}
    finally:
        connection.close()
    return ids
