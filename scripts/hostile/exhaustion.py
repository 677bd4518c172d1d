"""Attacks on ingest's resources: 16 MiB bodies, requests sent a byte at a time or never finished, and
hundreds of idle connections, all while valid traffic flows. One idle connection
and one trickled body (408 body-timeout) are the Swift corpus's (idleAndTricklingClientsAreCutOff,
under a short HTTP_IDLE_TIMEOUT_MS); here they are many, held for --hold seconds under load."""

import json
import socket
import threading
import time

from hostile.http_client import parse_raw_response
from hostile.monitor import open_fds
from hostile.traffic import campaign_jws, impression_body


def oversized_bodies(run):
    """16 MiB bodies, four times, for ingest's memory over the run: a body must not be buffered past
    its route's limit. The limits themselves, each route's at its edge, with Content-Length, chunked and
    a terabyte declared, are the Swift corpus's (HostileInputTests+Protocol.swift)."""
    category = "oversized"
    # 16 MiB in one go, four times (memory: the body must not be buffered beyond the limit).
    for n in range(4):
        body = b'{"device-identifier":"' + b"x" * (16 * 1024 * 1024) + b'"}'
        status, h, data, _, _ = run.raw(
            [run.request_bytes("POST", "/v1/impressions", body, {"Content-Type": "application/json"})], wait=20
        )
        run.seen.observe(category, f"16 MiB body #{n + 1}", status, h, data, expect=(413, "body-too-large"))


def slow_requests(run):
    """Slowloris: headers a byte at a time, a body a byte at a time, a declared body never finished.
    Held concurrently with valid traffic; whether and when the server gives up on them is reported."""
    target = run.target
    category = "slow"
    results = {}

    def slow_headers(n):
        # 20 ms per byte: about 3 s for the request line and headers, then a valid small request.
        jws = campaign_jws(target)
        payload = json.dumps(impression_body(jws, f"slow-headers-{n}")).encode()
        data = run.request_bytes("POST", "/v1/impressions", payload, {"Content-Type": "application/json"})
        split = data.index(b"\r\n\r\n") + 4
        chunks = [bytes([b]) for b in data[:split]] + [data[split:]]
        status, h, body, _, _ = run.raw(chunks, delay=run.options.hold / len(chunks), wait=15)
        run.seen.observe(category, "headers a byte at a time", status, h, body, expect=202)
        if status == 202:
            run.seen.allowed_verified[json.loads(body)["event-identifier"]] = (
                "slow headers (a valid impression, sent slowly)"
            )

    def slow_body(n):
        jws = campaign_jws(target)
        payload = json.dumps(impression_body(jws, f"slow-body-{n}")).encode()
        head = run.request_bytes(
            "POST",
            "/v1/impressions",
            None,
            {"Content-Type": "application/json", "Content-Length": str(len(payload))},
            content_length=False,
        )
        status, h, body, _, _ = run.raw(
            [head] + [bytes([b]) for b in payload], delay=run.options.hold / len(payload), wait=15
        )
        run.seen.observe(category, "body a byte at a time", status, h, body, expect=202)
        if status == 202:
            run.seen.allowed_verified[json.loads(body)["event-identifier"]] = (
                "slow body (a valid impression, sent slowly)"
            )

    def unfinished(n, partial_headers):
        # Content-Length 1000, 10 bytes sent, then silence: does the server ever close?
        sock = socket.create_connection(("127.0.0.1", target.ingest_port), timeout=run.options.hold + 5)
        if partial_headers:
            sock.sendall(b"POST /v1/impressions HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        else:
            sock.sendall(
                run.request_bytes(
                    "POST",
                    "/v1/impressions",
                    None,
                    {"Content-Type": "application/json", "Content-Length": "1000"},
                    content_length=False,
                )
                + b'{"device-i'
            )
        started = time.time()
        closed_after = None
        try:
            sock.settimeout(run.options.hold)
            data = sock.recv(65536)
            closed_after = time.time() - started
            status, h, body = parse_raw_response(data)
            if status is not None:
                run.seen.observe(category, "unfinished request answered", status, h, body)
        except TimeoutError:
            pass
        finally:
            sock.close()
        key = "partial headers" if partial_headers else "Content-Length never completed"
        with run.seen.lock:
            run.seen.inputs[category] += 1
            results.setdefault(key, []).append(closed_after)

    threads = [threading.Thread(target=slow_headers, args=(n,)) for n in range(5)]
    threads += [threading.Thread(target=slow_body, args=(n,)) for n in range(5)]
    threads += [threading.Thread(target=unfinished, args=(n, n % 2 == 0)) for n in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for key, closes in results.items():
        still_open = sum(1 for c in closes if c is None)
        if still_open:
            run.seen.findings.append(
                {
                    "kind": "no read timeout",
                    "case": key,
                    "detail": f"{still_open}/{len(closes)} connections still open after {run.options.hold:.0f} s of silence "
                    "(ingest closes a silent connection after HTTP_IDLE_TIMEOUT_MS, 30 s by default: a shorter "
                    "--hold does not reach it)",
                }
            )
    return results


def idle_connections(run):
    """Hundreds of connections that send nothing, held while valid traffic flows; then how many the
    server closed on its own, and /health latency while they are open."""
    target = run.target
    category = "idle"
    socks = []
    refused = 0
    for _ in range(run.options.idle):
        try:
            socks.append(socket.create_connection(("127.0.0.1", target.ingest_port), timeout=5))
        except OSError:
            refused += 1
    run.seen.count(category, run.options.idle)
    fds = open_fds(run.pid("ingest"))
    started = time.time()
    status, h, body = run.http("GET", "/health", timeout=10)
    health_ms = (time.time() - started) * 1000
    run.seen.observe(category, "/health with idle connections open", status, h, body, expect=200)
    time.sleep(run.options.hold)
    closed = 0
    for s in socks:
        s.setblocking(False)
        try:
            if s.recv(1) == b"":
                closed += 1
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
        s.close()
    result = {
        "opened": len(socks),
        "refused": refused,
        "ingest_fds_while_open": fds,
        "health_ms": round(health_ms, 1),
        "closed_by_server_after_hold": closed,
        "hold_s": run.options.hold,
    }
    if closed == 0 and socks:
        run.seen.findings.append(
            {
                "kind": "no idle timeout",
                "case": f"{len(socks)} idle connections",
                "detail": f"none closed by ingest after {run.options.hold:.0f} s; each holds a descriptor, so enough of them "
                "(ulimit -n) lock out every client",
            }
        )
    return result
