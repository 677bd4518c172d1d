"""Attacks on the HTTP layer itself: header floods and malformed HTTP (garbage, smuggling, odd methods,
paths and JSON), sent as raw bytes. Most are refused by the HTTP parser before any route runs."""

import os
import re
import socket


def header_floods(run):
    """Header sections no server should take: thousands of headers, megabyte values, a 100 KB URL,
    NUL, spaces and line folding where they are not allowed."""
    category = "headers"
    cases = [
        ("5,000 small headers", {f"X-Flood-{i}": "v" for i in range(5000)}),
        ("one 100 KB header", {"X-Huge": "a" * 100_000}),
        ("one 1 MB header", {"X-Huge": "a" * 1_000_000}),
        ("100 KB Authorization", {"Authorization": "Bearer " + "a" * 100_000}),
        ("1,000 Authorization headers", None),
        ("100 KB Idempotency-Key", {"Idempotency-Key": "k" * 100_000}),
        ("8 KB Content-Type", {"Content-Type": "application/json;" + "x" * 8_000}),
        ("100 KB URL", "url"),
        ("header value with NUL", {"X-Nul": "a\x00b"}),
        ("header name with space", {"X Bad": "v"}),
        ("obsolete line folding", {"X-Fold": "a\r\n folded"}),
    ]
    for name, headers in cases:
        path = "/v1/impressions"
        if headers == "url":
            path, headers = "/v1/impressions?" + "q" * 100_000, {}
        if headers is None:
            data = (
                b"POST /v1/conversions HTTP/1.1\r\nHost: x\r\n"
                + b"Authorization: Bearer x\r\n" * 1000
                + b"Content-Length: 2\r\n\r\n{}"
            )
        else:
            data = run.request_bytes("POST", path, b"{}", {"Content-Type": "application/json", **headers})
        status, h, body, closed, _ = run.raw([data], wait=10)
        # Parser-level refusals (431/400 from NIO) come without a route: protocol level.
        run.seen.observe(category, name, status, h, body, expect={400, 401, 413, 414, 431}, protocol_level=True)


def malformed_http(run):
    """Bytes that are not valid HTTP, or are valid HTTP no route expects; then pipelining, two valid
    requests and a broken one in one write."""
    target = run.target
    category = "malformed"

    def admin_get(path):
        """A GET of `path` (raw bytes, as sent) with the admin token: what the route makes of it."""
        return (
            b"GET "
            + path
            + b" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
            + target.admin_token.encode()
            + b"\r\n\r\n"
        )

    cases = [
        ("garbage", b"\x00\x01\x02garbage\r\n\r\n"),
        (
            "TLS ClientHello on the plain port",
            bytes.fromhex("160301002a010000260303") + os.urandom(32) + b"\x00\x00\x02\x13\x01\x01\x00",
        ),
        ("HTTP/2 preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
        ("HTTP/9.9", b"GET /health HTTP/9.9\r\nHost: x\r\n\r\n"),
        ("no HTTP version", b"GET /health\r\n\r\n"),
        ("bare LF line endings", b"GET /health HTTP/1.1\nHost: x\n\n"),
        ("lower-case method", b"get /health HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("unknown method", b"BREW /v1/impressions HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"),
        ("4 KB method", b"A" * 4096 + b" / HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("no Host header", b"GET /health HTTP/1.1\r\n\r\n"),
        ("two Hosts", b"GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"),
        ("negative Content-Length", b"POST /v1/impressions HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n{}"),
        ("non-numeric Content-Length", b"POST /v1/impressions HTTP/1.1\r\nHost: x\r\nContent-Length: ten\r\n\r\n{}"),
        (
            "two different Content-Lengths",
            b"POST /v1/impressions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 40\r\n\r\n{}",
        ),
        (
            "Content-Length and chunked (smuggling)",
            b"POST /v1/impressions HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /v1/admin/dead-letters HTTP/1.1\r\nHost: x\r\n\r\n",
        ),
        (
            "chunk size overflow",
            b"POST /v1/impressions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffffff\r\n{}\r\n0\r\n\r\n",
        ),
        (
            "chunk size not hex",
            b"POST /v1/impressions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
        ),
        ("unknown transfer coding", b"POST /v1/impressions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n{}"),
        ("CR inside the request line", b"GET /hea\rlth HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("space in the path", b"GET /v1/admin/ad-networks/a b HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("absolute-form URI", b"GET http://evil.example/health HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("path traversal", b"GET /../../../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("encoded traversal", b"GET /v1/admin/ad-networks/..%2f..%2fopenapi.json HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("percent-encoded NUL", admin_get(b"/v1/admin/ad-networks/a%00b")),
        ("invalid percent-encoding", admin_get(b"/v1/admin/ad-networks/%zz")),
        ("UTF-8 overlong in path", admin_get(b"/v1/admin/advertised-apps/%c0%ae%c0%ae")),
        ("raw bytes >0x7F in path", admin_get(b"/v1/admin/ad-networks/\xff\xfe")),
        ("item id beyond UInt64", admin_get(b"/v1/admin/advertised-apps/99999999999999999999999/rejections")),
        ("CONNECT", b"CONNECT 169.254.169.254:80 HTTP/1.1\r\nHost: 169.254.169.254:80\r\n\r\n"),
        ("TRACE", b"TRACE / HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("OPTIONS *", b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("DELETE on an event route", b"DELETE /v1/impressions HTTP/1.1\r\nHost: x\r\n\r\n"),
        (
            "X-HTTP-Method-Override to an admin route",
            b"POST /v1/impressions HTTP/1.1\r\nHost: x\r\nX-HTTP-Method-Override: DELETE\r\nContent-Length: 2\r\n\r\n{}",
        ),
        (
            "Expect: 100-continue, then nothing",
            b"POST /v1/impressions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 100000\r\n\r\n",
        ),
        ("HTTP/1.0 without Content-Length", b"POST /v1/impressions HTTP/1.0\r\n\r\n{}"),
        ("request line only, then close", b"POST /v1/impressions HTTP/1.1\r\n"),
        (
            "JSON with a BOM",
            run.request_bytes("POST", "/v1/impressions", b"\xef\xbb\xbf{}", {"Content-Type": "application/json"}),
        ),
        (
            "JSON object nested 10,000 deep",
            run.request_bytes(
                "POST",
                "/v1/impressions",
                b'{"a":' * 10_000 + b"1" + b"}" * 10_000,
                {"Content-Type": "application/json"},
            ),
        ),
        (
            "JSON array nested 30,000 deep",
            run.request_bytes(
                "POST", "/v1/impressions", b"[" * 30_000 + b"]" * 30_000, {"Content-Type": "application/json"}
            ),
        ),
        (
            "invalid UTF-8 in JSON",
            run.request_bytes(
                "POST",
                "/v1/impressions",
                b'{"device-identifier":"\xff\xfe","impression":"a.b.c","interaction":{"type":"click","time":1,"loaded-at":1}}',
                {"Content-Type": "application/json"},
            ),
        ),
        (
            "lone surrogate escape",
            run.request_bytes(
                "POST",
                "/v1/impressions",
                b'{"device-identifier":"\\ud800","impression":"a.b.c","interaction":{"type":"click","time":1,"loaded-at":1}}',
                {"Content-Type": "application/json"},
            ),
        ),
        (
            "number 1e400",
            run.request_bytes(
                "POST",
                "/v1/impressions",
                b'{"device-identifier":"d","impression":"a.b.c","interaction":{"type":"click","time":1e400,"loaded-at":1}}',
                {"Content-Type": "application/json"},
            ),
        ),
        (
            "time beyond Int64",
            run.request_bytes(
                "POST",
                "/v1/impressions",
                b'{"device-identifier":"d","impression":"a.b.c","interaction":{"type":"click","time":99999999999999999999,"loaded-at":1}}',
                {"Content-Type": "application/json"},
            ),
        ),
        (
            "duplicate keys",
            run.request_bytes(
                "POST",
                "/v1/impressions",
                b'{"device-identifier":"d","device-identifier":"e","impression":"a.b.c","interaction":{"type":"click","time":1,"loaded-at":1}}',
                {"Content-Type": "application/json"},
            ),
        ),
        (
            "Int64.min times",
            run.request_bytes(
                "POST",
                "/v1/impressions",
                b'{"device-identifier":"d","impression":"a.b.c","interaction":{"type":"view","time":-9223372036854775808,"begin":9223372036854775807}}',
                {"Content-Type": "application/json"},
            ),
        ),
        (
            "XML entity bomb as Info.plist",
            run.request_bytes(
                "PUT",
                f"/v1/admin/advertised-apps/{target.fuzz_app}",
                b'<?xml version="1.0"?><!DOCTYPE p [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;"><!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;"><!ENTITY f "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;"><!ENTITY g "&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;">]><plist version="1.0"><dict><key>CFBundleName</key><string>&g;</string></dict></plist>',
                {"Content-Type": "application/xml", "Authorization": "Bearer " + target.admin_token},
            ),
        ),
        (
            "XML external entity as Info.plist",
            run.request_bytes(
                "PUT",
                f"/v1/admin/advertised-apps/{target.fuzz_app}",
                b'<?xml version="1.0"?><!DOCTYPE p [<!ENTITY x SYSTEM "file:///etc/passwd">]><plist version="1.0"><dict><key>AttributionCopyEndpoint</key><string>&x;</string></dict></plist>',
                {"Content-Type": "application/x-plist", "Authorization": "Bearer " + target.admin_token},
            ),
        ),
        (
            "binary plist header",
            run.request_bytes(
                "PUT",
                f"/v1/admin/advertised-apps/{target.fuzz_app}",
                b"bplist00" + os.urandom(200),
                {"Content-Type": "application/x-plist", "Authorization": "Bearer " + target.admin_token},
            ),
        ),
    ]
    for name, data in cases:
        status, h, body, closed, _ = run.raw([data], wait=5)
        run.seen.observe(category, name, status, h, body, protocol_level=True)
        if name.startswith("XML") and status == 200:
            run.seen.unexpected.append(
                {
                    "category": category,
                    "case": name,
                    "expected": "4xx",
                    "got": status,
                    "body": body[:200].decode("utf-8", "replace"),
                }
            )
    # Pipelining: two valid requests and a broken one in one write; the first two are answered.
    data = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\nGARBAGE\r\n\r\n"
    sock = socket.create_connection(("127.0.0.1", target.ingest_port), timeout=5)
    sock.sendall(data)
    received = b""
    try:
        while received.count(b"HTTP/1.1 ") < 3:
            part = sock.recv(65536)
            if not part:
                break
            received += part
    except TimeoutError:
        pass
    sock.close()
    answers = re.findall(rb"HTTP/1\.1 (\d{3})", received)
    run.seen.count(category)
    if answers[:2] != [b"200", b"200"]:
        run.seen.unexpected.append(
            {"category": category, "case": "pipelined", "expected": "200, 200, then an error", "got": str(answers)}
        )
