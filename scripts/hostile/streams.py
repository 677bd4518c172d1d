"""The pipeline's streams as the run reads them back: every partition of a stream (names from the
project's catalog), its messages as JSON (`attribution stream`, which reads every form a message is
stored in, so no decoder is written again here), the verifier's verdicts so far."""

from harness import RedisConnection, RedisError, partitioned, stream_lines


def connect(port):
    """A connection whose bulk replies are bytes (stored states and held postbacks are binary); gives up
    after 30 s of silence."""
    return RedisConnection(port, binary=True, timeout=30)


def command(connection, *arguments):
    """One command's reply; an error reply raises (a run that cannot read Redis cannot judge it)."""
    reply = connection.pipeline([arguments])[0]
    if isinstance(reply, RedisError):
        raise RuntimeError(reply)
    return reply


def envelopes(port, stream):
    """Every message of every partition of a stream, in entry order, as its JSON envelope ({type, id,
    time, schema, body}); an entry with no message this version reads as {"type": "undecodable"}."""
    lines = stream_lines(f"redis://127.0.0.1:{port}/0", stream)
    return [line.get("message") or {"type": "undecodable", "detail": line.get("undecodable")} for line in lines]


def entries(connection, stream):
    """Every raw (id, fields) entry of every partition of a stream."""
    return [entry for name in partitioned(stream) for entry in command(connection, "XRANGE", name, "-", "+")]


def length(connection, stream):
    """Entries in a stream now, summed over its partitions."""
    return sum(command(connection, "XLEN", name) for name in partitioned(stream))


def verdicts_so_far(port):
    """Ids the verifier has decided (verified or rejected) so far; cheap enough for the replay loop."""
    ids = {e.get("id") for e in envelopes(port, "verified")}
    return ids | {e.get("body", {}).get("event-identifier") for e in envelopes(port, "rejected")}
