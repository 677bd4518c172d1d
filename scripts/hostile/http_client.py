"""Requests to the run's services: well-formed ones through http.client, and raw bytes on a socket for
what http.client would refuse to send (or would fix on the way)."""

import json
import re
import socket
import time
from http.client import HTTPConnection


def port_for(target, path):
    """The admin service (its HTTP_PORT) serves the admin API and /metrics; ingest's public port the rest."""
    if isinstance(path, bytes):
        path = path.decode("latin-1")
    return target.admin_port if path.startswith("/v1/admin") or path.startswith("/metrics") else target.ingest_port


def http(target, method, path, body=None, headers=None, timeout=30, port=None):
    """One request on a fresh connection: (status, lower-cased headers, body bytes)."""
    if body is not None and not isinstance(body, (bytes, str)):
        body = json.dumps(body)
    if isinstance(body, str):
        body = body.encode()
    connection = HTTPConnection("127.0.0.1", port or port_for(target, path), timeout=timeout)
    try:
        sent = {"Content-Type": "application/json"} if body is not None else {}
        sent.update(headers or {})
        connection.request(method, path, body=body, headers=sent)
        reply = connection.getresponse()
        return reply.status, {k.lower(): v for k, v in reply.getheaders()}, reply.read()
    finally:
        connection.close()


def request_bytes(target, method, path, body=b"", headers=None, content_length=True):
    """An HTTP/1.1 request as bytes, Host ingest's public address; Content-Length from `body` unless
    `content_length` is false (a caller that declares its own, or none)."""
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{target.ingest_port}"]
    for name, value in (headers or {}).items():
        lines.append(f"{name}: {value}")
    if content_length and body is not None:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b"")


def parse_raw_response(data):
    """(status, headers, body) from raw bytes of an HTTP/1.1 answer (first answer only)."""
    if not data:
        return None, {}, b""
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    match = re.match(rb"HTTP/\d\.\d (\d{3})", lines[0])
    if not match:
        return None, {}, data
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower().decode("latin-1")] = value.strip().decode("latin-1")
    if "content-length" in headers:
        body = body[: int(headers["content-length"])]
    return int(match.group(1)), headers, body


def raw(target, chunks, delay=0.0, wait=5.0, port=None):
    """Sends `chunks` on a raw socket (sleeping `delay` between them), then reads until the server
    closes or `wait` seconds of silence. (status, headers, body, closed_by_server, sent_all). The port is
    the one the first request line's path belongs to (`port_for`) unless given."""
    if port is None and chunks:
        request_line = chunks[0].split(b"\r\n", 1)[0].split(b" ")
        port = port_for(target, request_line[1]) if len(request_line) > 1 else target.ingest_port
    sock = socket.create_connection(("127.0.0.1", port), timeout=wait)
    sent_all = True
    data = b""
    try:
        for chunk in chunks:
            try:
                sock.sendall(chunk)
            except OSError:  # the server closed on us mid-request (e.g. after answering 413)
                sent_all = False
                break
            if delay:
                time.sleep(delay)
        closed = False
        try:
            while True:
                part = sock.recv(65536)
                if not part:
                    closed = True
                    break
                data += part
                status, headers, body = parse_raw_response(data)
                if status is not None and "content-length" in headers and len(body) >= int(headers["content-length"]):
                    break
        except (TimeoutError, ConnectionResetError):
            closed = not data
    finally:
        sock.close()
    status, headers, body = parse_raw_response(data)
    return status, headers, body, closed, sent_all
