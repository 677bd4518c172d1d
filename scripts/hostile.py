#!/usr/bin/env python3
"""Hostile input against the real pipeline (issue 10). scripts/hostile.sh calls it with the bin dir:

    python3 scripts/hostile.py BIN OUTDIR [--examples N] [--idle N] [--hold S] [--rate R] [--skip-fuzz]

It copies the binaries it runs into OUTDIR/bin (someone may rebuild BIN meanwhile), starts a private
redis-server, the five services and the reference receiver, and then, while a background thread
keeps sending properly signed impressions and conversions:

1. fuzzes every operation of ingest's OpenAPI document with schemathesis (pinned, installed into a
   venv under ~/.cache when missing): once without credentials, once with the admin token and an app
   key, so generated requests get past the auth checks to the body checks;
2. abuses the HTTP layer with raw sockets: oversized, slow and never-finished bodies, header floods,
   malformed HTTP, hundreds of idle connections, replayed impressions, admin calls without or with a
   wrong token, postback URLs aimed at private, loopback, link-local and metadata addresses;
3. checks the invariants: no service died and /health answers, no 5xx anywhere, every 4xx is RFC 9457
   problem JSON, every valid event was acknowledged and verified, nothing hostile reached `verified`
   (what ingest accepted from hostile requests was refused by the verifier, with a reason), ingest's
   memory did not blow up.

Writes OUTDIR/report.md and OUTDIR/report.json; exits 1 on any violation. Stdlib, `cryptography`
and schemathesis only."""

import argparse
import base64
import collections
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid
from http.client import HTTPConnection

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from harness import catalog, caught_up, free_port, group_entry, keygen, partitioned, rss_mib, use_binaries
from pins import pinned

SCHEMATHESIS = pinned("schemathesis")  # its checks and report format are what we parse
VENV = os.path.expanduser("~/.cache/attribution-pipeline/hostile-venv")

args = None  # the command line, once `configure` has read it
OUT = None  # the run directory


def parse_arguments(argv=None):
    """The command line (`argv`, else the process's)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "bin", help="directory holding ingest, verifier, attribution-winner, scheduler, dispatcher, attribution"
    )
    parser.add_argument("out", help="run directory (logs, Redis, reports)")
    parser.add_argument(
        "--examples", type=int, default=40, help="schemathesis examples per operation and phase (default 40)"
    )
    parser.add_argument(
        "--fuzz-seconds", type=int, default=75, help="time budget of each schemathesis run (default 75)"
    )
    parser.add_argument("--idle", type=int, default=800, help="concurrent idle connections to hold (default 800)")
    parser.add_argument(
        "--hold", type=float, default=12.0, help="seconds to hold slow and unfinished requests (default 12)"
    )
    parser.add_argument(
        "--rate", type=float, default=8.0, help="valid impressions (plus as many conversions) per second (default 8)"
    )
    parser.add_argument("--skip-fuzz", action="store_true", help="skip schemathesis (raw abuse only)")
    parser.add_argument("--seed", type=int, default=10, help="schemathesis seed (default 10)")
    return parser.parse_args(argv)


def configure(argv=None):
    """Reads the command line and prepares the run directory: called by `__main__`, not at import."""
    global args, OUT
    args = parse_arguments(argv)
    OUT = os.path.abspath(args.out)
    use_binaries(args.bin)
    os.makedirs(os.path.join(OUT, "logs"), exist_ok=True)


SERVICES = ["ingest", "admin", "verifier", "attribution-winner", "scheduler", "dispatcher"]
children = {}  # name -> Popen
lock = threading.Lock()


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


launch = {}  # name -> (argv, env): how to start it again
crashes = []  # every unexpected exit: service, exit code, crash site from its backtrace, log file


def start(name, argv, env=None, logname=None):
    logfile = open(os.path.join(OUT, "logs", (logname or name) + ".log"), "w")
    launch[name] = (argv, env)
    children[name] = subprocess.Popen(
        argv, env={**os.environ, **(env or {})}, stdout=logfile, stderr=subprocess.STDOUT, start_new_session=True
    )  # our own group: a Ctrl-C reaches us, not them
    return children[name]


def crash_site(logfile):
    """The first frame of the crashed thread that is in our sources, and the runtime's message."""
    text = open(logfile, errors="replace").read()
    message = re.search(r"\*\*\* (Swift runtime failure: [^*]+|Program crashed: [^*]+)\*\*\*", text)
    crashed = text.split(" crashed:", 1)[-1] if " crashed:" in text else ""
    frame = next((line.strip() for line in crashed.splitlines() if "/work/" in line or ".swift:" in line), "")
    frame = re.sub(r"^\d+\s+(\[\w+\]\s+)*0x[0-9a-f]+\s+", "", frame)
    return ((message.group(1).strip() + " — ") if message else "") + frame


class Supervisor(threading.Thread):
    """Restarts a service that died, as compose's restart policy would, so the run goes on and a
    message that kills a stage shows whether it is dead-lettered after MAX_ATTEMPTS or keeps killing
    replicas. Every exit is a crash in the report."""

    def __init__(self):
        super().__init__(daemon=True)
        self.stop = threading.Event()

    def run(self):
        while not self.stop.wait(0.5):
            for name in SERVICES:
                process = children[name]
                if process.poll() is None:
                    continue
                count = sum(1 for c in crashes if c["service"] == name)
                logfile = os.path.join(OUT, "logs", (name if count == 0 else f"{name}.{count}") + ".log")
                crashes.append(
                    {
                        "service": name,
                        "exit_code": process.poll(),
                        "at": time.strftime("%H:%M:%S"),
                        "phase": current_phase[0],
                        "site": crash_site(logfile),
                        "log": logfile,
                    }
                )
                log(f"!! {name} exited with {process.poll()} during {current_phase[0]}: {crashes[-1]['site']}")
                if count < 10:
                    argv, env = launch[name]
                    start(name, argv, env, logname=f"{name}.{count + 1}")


current_phase = ["setup"]


def stop_all():
    # Services first, Redis last: a worker whose Redis vanished mid-read only logs noise.
    for group in ([p for n, p in children.items() if n != "redis"], [p for n, p in children.items() if n == "redis"]):
        for process in group:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in group:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()


def open_fds(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


# ---------------------------------------------------------------------------------------------------
# Envelopes between stages are in CompactCoding's binary form (Shared/AttributionModel/Coding): magic
# 0xF5, version 2 (a key is the varint 2n + 1 for number n of the key table, else 2 × its byte count and
# its text), then one tagged value. Decoded into the same dicts json.loads gives for the JSON form; the
# magic and the key table come from `attribution catalog --json`.


def compact_coding():
    return catalog()["compact-coding"]


def compact_decode(raw):
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
            return compact_coding()["keys"][code >> 1], at
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

    if raw[1] != compact_coding()["version"]:
        return {"type": "binary", "raw": raw[:16].hex()}
    return value(2)[0]


# A tiny RESP client: binary safe, no dependency, enough for XRANGE, XINFO and XLEN.


class Redis:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.file = self.sock.makefile("rb")

    def __call__(self, *parts):
        out = [b"*%d\r\n" % len(parts)]
        for part in parts:
            data = part if isinstance(part, bytes) else str(part).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(data), data))
        self.sock.sendall(b"".join(out))
        return self.read()

    def read(self):
        line = self.file.readline()[:-2]
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self.file.read(n + 2)[:-2]
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise RuntimeError(f"unexpected RESP reply {line!r}")

    def stream(self, name):
        """Every entry of every partition of a stream as decoded envelopes ({type, id, time, schema, body})."""
        return [entry for partition in partitioned(name) for entry in self.partition(partition)]

    def entries(self, name):
        """Every raw (id, fields) entry of every partition of a stream."""
        return [entry for partition in partitioned(name) for entry in self("XRANGE", partition, "-", "+")]

    def length(self, name):
        return sum(self("XLEN", partition) for partition in partitioned(name))

    def partition(self, name):
        entries, start = [], "-"
        while True:
            batch = self("XRANGE", name, start, "+", "COUNT", 1000)
            for _entry_id, fields in batch:
                pairs = dict(zip(fields[::2], fields[1::2], strict=False))
                raw = pairs.get(b"e", b"")
                if raw[:1] == bytes([compact_coding()["magic"]]):
                    entries.append(compact_decode(raw))
                    continue
                try:
                    entries.append(json.loads(raw))
                except ValueError:
                    entries.append({"type": "binary", "raw": raw[:16].hex()})  # compact held postbacks
            if len(batch) < 1000:
                return entries
            start = "(" + batch[-1][0].decode()

    def group_done(self, stream, group):
        return all(self.partition_done(name, group) for name in partitioned(stream))

    def partition_done(self, stream, group):
        try:
            groups = self("XINFO", "GROUPS", stream)
        except RuntimeError:
            return False
        return caught_up(group_entry(groups, group))


# ---------------------------------------------------------------------------------------------------
# Observations: every answer our own clients got, per category. The invariants read them at the end.

stats = {
    "inputs": collections.Counter(),  # category -> requests (or connections) tried
    "status": collections.defaultdict(collections.Counter),  # category -> status -> count
    "reasons": collections.Counter(),  # "status reason" -> count (4xx)
    "five_xx": [],  # (category, case, status, body)
    "not_problem_json": [],  # (category, case, status, why)
    "unexpected": [],  # (category, case, expected, got, body): answers the brief says must differ
    "findings": [],  # soft: worth knowing, not a violation of this run's invariants
    "hostile_event_ids": {},  # event id -> case: accepted (202) from hostile requests, must be refused
    "expected_verdicts": {},  # event id -> (case, reason the verifier must give)
    "allowed_verified": {},  # event id -> case: hostile-run requests that are legitimately valid (replay originals)
    "answers": [],  # every answer our raw clients got, for answers.jsonl
}


def problem_json_defect(status, headers, body):
    """None when the answer is RFC 9457 problem JSON for `status`, else what is wrong."""
    content_type = (headers.get("content-type") or "").split(";")[0].strip().lower()
    if content_type != "application/problem+json":
        return f"content-type {content_type or 'missing'!r}, body {body[:80]!r}"
    try:
        problem = json.loads(body)
    except ValueError:
        return f"body is not JSON: {body[:80]!r}"
    missing = [k for k in ("type", "title", "status") if k not in problem]
    if missing:
        return f"missing {', '.join(missing)}"
    if problem["status"] != status:
        return f"status {problem['status']} in the body, {status} on the wire"
    return None


def observe(category, case, status, headers, body, expect=None, protocol_level=False):
    """Records one answer. `expect`: a status, a set of statuses or (status, reason); a mismatch is
    noted. `protocol_level`: the request was not valid HTTP, so the answer comes from the HTTP parser
    (no route ran); a bare 400 there is noted as a finding, not a problem-JSON violation."""
    with lock:
        stats["inputs"][category] += 1
        key = str(status) if status is not None else "no answer"
        stats["status"][category][key] += 1
        reason = None
        if status is not None and status >= 400:
            try:
                reason = json.loads(body).get("reason")
            except Exception:
                reason = None
        if status == 202 and not category.startswith("fuzz-"):
            # Whatever ingest accepted from a hostile request must get a verdict (slow valid ones are
            # moved to allowed_verified by their caller).
            try:
                stats["hostile_event_ids"][json.loads(body)["event-identifier"]] = f"{category}: {case}"
            except Exception:
                pass
        if not category.startswith("fuzz-"):
            stats["answers"].append(
                {
                    "category": category,
                    "case": case,
                    "status": status,
                    "reason": reason,
                    "content_type": headers.get("content-type"),
                    "body": body[:160].decode("utf-8", "replace"),
                }
            )
        if status is not None and status >= 500:
            stats["five_xx"].append(
                {"category": category, "case": case, "status": status, "body": body[:300].decode("utf-8", "replace")}
            )
        if status is not None and 400 <= status < 600:
            stats["reasons"][f"{status} {reason or '(no problem JSON)'}"] += 1
            defect = problem_json_defect(status, headers, body)
            if defect:
                entry = {"category": category, "case": case, "status": status, "defect": defect}
                if protocol_level:
                    stats["findings"].append({"kind": "protocol-level error without problem JSON", **entry})
                else:
                    stats["not_problem_json"].append(entry)
        if expect is not None:
            ok = True
            if isinstance(expect, tuple):
                ok = status == expect[0] and reason == expect[1]
            elif isinstance(expect, (set, frozenset)):
                ok = status in expect
            else:
                ok = status == expect
            if not ok:
                stats["unexpected"].append(
                    {
                        "category": category,
                        "case": case,
                        "expected": str(expect),
                        "got": status,
                        "reason": reason,
                        "body": body[:200].decode("utf-8", "replace"),
                    }
                )
        return reason


def port_for(path):
    """The admin service (its HTTP_PORT) serves the admin API and /metrics; ingest's public port the rest."""
    if isinstance(path, bytes):
        path = path.decode("latin-1")
    return ADMIN_PORT if path.startswith("/v1/admin") or path.startswith("/metrics") else INGEST_PORT


def http(method, path, body=None, headers=None, timeout=30, port=None):
    """One request on a fresh connection: (status, lower-cased headers, body bytes)."""
    if body is not None and not isinstance(body, (bytes, str)):
        body = json.dumps(body)
    if isinstance(body, str):
        body = body.encode()
    connection = HTTPConnection("127.0.0.1", port or port_for(path), timeout=timeout)
    try:
        sent = {"Content-Type": "application/json"} if body is not None else {}
        sent.update(headers or {})
        connection.request(method, path, body=body, headers=sent)
        reply = connection.getresponse()
        return reply.status, {k.lower(): v for k, v in reply.getheaders()}, reply.read()
    finally:
        connection.close()


def call(category, case, method, path, body=None, headers=None, expect=None, protocol_level=False):
    status, reply_headers, data = http(method, path, body, headers)
    observe(category, case, status, reply_headers, data, expect, protocol_level)
    return status, data


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


def raw(chunks, delay=0.0, wait=5.0, port=None):
    """Sends `chunks` on a raw socket (sleeping `delay` between them), then reads until the server
    closes or `wait` seconds of silence. (status, headers, body, closed_by_server, sent_all)."""
    if port is None and chunks:
        target = chunks[0].split(b"\r\n", 1)[0].split(b" ")
        port = port_for(target[1]) if len(target) > 1 else INGEST_PORT
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


# ---------------------------------------------------------------------------------------------------
# Signing impressions the way an ad network's own server would (as IndependentSignerTests does).


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def sign_jws(key, header, payload):
    signing_input = b64(json.dumps(header, separators=(",", ":")).encode()) + "." + b64(json.dumps(payload).encode())
    r, s = decode_dss_signature(key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
    return signing_input + "." + b64(r.to_bytes(32, "big") + s.to_bytes(32, "big"))


def now_ms():
    return int(time.time() * 1000)


def impression_payload(network, app, publisher, source=1234, impression_id=None):
    return {
        "impression-identifier": impression_id or str(uuid.uuid4()).upper(),
        "ad-network-identifier": network,
        "advertised-item-identifier": app,
        "publisher-item-identifier": publisher,
        "source-identifier": source,
        "timestamp": now_ms(),
        "impression-type": "app-impression",
        "eligible-for-re-engagement": False,
    }


def impression_body(jws, device):
    t = now_ms()
    return {
        "device-identifier": device,
        "impression": jws,
        "interaction": {"type": "click", "time": t, "loaded-at": t - 500},
    }


# ---------------------------------------------------------------------------------------------------
# Valid traffic: one signed impression and one conversion for its device per tick, all run long.


class ValidTraffic(threading.Thread):
    def __init__(self, rate):
        super().__init__(daemon=True)
        self.interval = 1.0 / rate
        self.stop = threading.Event()
        self.sent = collections.Counter()
        self.accepted = collections.Counter()
        self.ids = {}  # event id -> kind
        self.failures = []  # (kind, status or error, body)
        self.latencies = []

    def post(self, kind, path, body, headers=None):
        self.sent[kind] += 1
        started = time.time()
        try:
            status, _, data = http("POST", path, body, headers, timeout=20)
        except Exception as error:  # a refused or reset connection is a failure of the invariant
            self.failures.append({"kind": kind, "error": repr(error)})
            return
        self.latencies.append(time.time() - started)
        if status == 202:
            self.accepted[kind] += 1
            self.ids[json.loads(data)["event-identifier"]] = kind
        else:
            self.failures.append({"kind": kind, "status": status, "body": data[:200].decode("utf-8", "replace")})

    def run(self):
        n = 0
        while not self.stop.is_set():
            started = time.time()
            device = f"valid-{n}-{uuid.uuid4().hex[:8]}"
            jws = sign_jws(
                NETWORK_KEY,
                {"alg": "ES256", "kid": NETWORK},
                impression_payload(NETWORK, APP, PUBLISHER, source=n % 9000),
            )
            self.post("impression", "/v1/impressions", impression_body(jws, device))
            self.post(
                "conversion",
                "/v1/conversions",
                {
                    "device-identifier": device,
                    "advertised-item-identifier": APP,
                    "conversion-type": "download",
                    "time": now_ms(),
                },
                {"Authorization": "Bearer " + APP_KEY},
            )
            n += 1
            self.stop.wait(max(0.0, self.interval - (time.time() - started)))

    def latency_ms(self, q):
        values = sorted(self.latencies)
        return round(values[min(len(values) - 1, int(q * len(values)))] * 1000, 1) if values else None


class MemoryMonitor(threading.Thread):
    """Samples ingest's resident memory and open descriptors every half second: the peak matters more
    than the last value (an idle-connection flood is over by the end)."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.stop, self.peak_rss, self.peak_fds = pid, threading.Event(), 0.0, 0

    def run(self):
        while not self.stop.is_set():
            self.peak_rss = max(self.peak_rss, rss_mib(self.pid))
            self.peak_fds = max(self.peak_fds, open_fds(self.pid))
            self.stop.wait(0.5)


# ---------------------------------------------------------------------------------------------------
# 1. Property-based fuzzing from the OpenAPI document (schemathesis).


def ensure_schemathesis():
    exe = os.path.join(VENV, "bin", "schemathesis")
    if os.path.exists(exe):
        version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
        if SCHEMATHESIS.split("==")[1] in version:
            return exe
    log(f"installing {SCHEMATHESIS} into {VENV}")
    subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
    subprocess.run([os.path.join(VENV, "bin", "pip"), "install", "--quiet", SCHEMATHESIS], check=True, timeout=900)
    return exe


# Checks whose failure means a bug on our side; the rest are reported as conformance notes.
HARD_CHECKS = {"not_a_server_error"}


def fuzz(label, auth, listener):
    """Runs schemathesis over every operation of one of ingest's listeners ("public": the event API;
    "admin": the admin API and /metrics on the admin service's port); returns its figures and every failure."""
    exe = ensure_schemathesis()
    label = f"{label}-{listener}"
    directory = os.path.join(OUT, "schemathesis", label)
    os.makedirs(directory, exist_ok=True)
    config = os.path.join(directory, "schemathesis.toml")
    with open(config, "w") as f:
        # Credentials per security scheme of the document: admin routes get the admin token, event
        # routes the app key. Without credentials the file leaves auth out entirely.
        if auth:
            f.write(
                f'[auth.openapi.adminToken]\nbearer = "{ADMIN_TOKEN}"\n\n[auth.openapi.appKey]\nbearer = "{FUZZ_APP_KEY}"\n'
            )
    port, paths = (ADMIN_PORT, "--include-path-regex") if listener == "admin" else (INGEST_PORT, "--exclude-path-regex")
    argv = [
        exe,
        "--config-file",
        config,
        "run",
        f"http://127.0.0.1:{INGEST_PORT}/openapi.json",
        "--url",
        f"http://127.0.0.1:{port}",
        paths,
        "^/(v1/admin/|metrics)",
        "--checks",
        "all",
        "--max-examples",
        str(args.examples),
        "--max-time",
        str(args.fuzz_seconds),
        "--workers",
        "2",
        "--seed",
        str(args.seed),
        "--request-timeout",
        "20",
        "--no-color",
        "--generation-database",
        "none",
        "--report",
        "ndjson,har",
        "--report-dir",
        directory,
        "--suppress-health-check",
        "all",
        "--continue-on-failure",
    ]
    log(f"schemathesis ({label}): {' '.join(argv[1:])}")
    started = time.time()
    # Run inside the report directory: schemathesis keeps a `.schemathesis/` cache in its working directory.
    result = subprocess.run(argv, capture_output=True, text=True, timeout=args.fuzz_seconds * 4 + 300, cwd=directory)
    open(os.path.join(directory, "output.txt"), "w").write(result.stdout + result.stderr)
    figures = {"label": label, "exit_code": result.returncode, "seconds": round(time.time() - started, 1)}
    figures.update(read_fuzz_reports(directory, label))
    return figures


def read_fuzz_reports(directory, label):
    """Counts requests from the HAR (every request schemathesis sent, with its answer) and failures
    from the NDJSON events; checks 5xx and problem JSON on every answer; collects 202 event ids."""
    requests, statuses, failures = 0, collections.Counter(), []
    har = next((os.path.join(directory, n) for n in os.listdir(directory) if n.startswith("har")), None)
    if har:
        for entry in json.load(open(har))["log"]["entries"]:
            requests += 1
            status = entry["response"]["status"]
            statuses[str(status)] += 1
            headers = {h["name"].lower(): h["value"] for h in entry["response"]["headers"]}
            text = entry["response"].get("content", {}).get("text") or ""
            if entry["response"].get("content", {}).get("encoding") == "base64":
                text = base64.b64decode(text).decode("utf-8", "replace")
            body = text.encode()
            url = entry["request"]["url"]
            case = f"{entry['request']['method']} {url[url.find('/', url.find('//') + 2) :][:120]}"
            observe(f"fuzz-{label}", case, status, headers, body)
            stats["inputs"][f"fuzz-{label}"] -= 0  # counted by observe
            if status == 202:
                try:
                    stats["hostile_event_ids"][json.loads(body)["event-identifier"]] = f"fuzz-{label}: {case}"
                except Exception:
                    pass
    ndjson = next((os.path.join(directory, n) for n in os.listdir(directory) if n.endswith(".ndjson")), None)
    seen = {}
    for line in open(ndjson) if ndjson else []:
        try:
            event = json.loads(line).get("ScenarioFinished")
        except ValueError:
            continue
        if not event:
            continue
        recorder = event.get("recorder") or {}
        for case_id, check_list in (recorder.get("checks") or {}).items():
            for check in check_list:
                if str(check.get("status")).lower() != "failure":
                    continue
                failure = (check.get("failure_info") or {}).get("failure") or {}
                operation = failure.get("operation") or recorder.get("label")
                # One entry per check and operation (the 405 check fails once per undeclared method).
                key = (check.get("name"), operation, failure.get("title"))
                if key in seen:
                    seen[key]["occurrences"] += 1
                    continue
                # The request that showed it, and what came back: enough to reproduce with curl.
                interaction = (recorder.get("interactions") or {}).get(case_id) or {}
                request = interaction.get("request") or {}
                response = interaction.get("response") or {}
                body = request.get("body")
                if isinstance(body, dict) and "$base64" in body:
                    body = base64.b64decode(body["$base64"]).decode("utf-8", "replace")
                answer = response.get("content") or {}
                if isinstance(answer, dict) and "$base64" in answer:
                    answer = base64.b64decode(answer["$base64"]).decode("utf-8", "replace")
                failures.append(
                    {
                        "check": check.get("name"),
                        "code": failure.get("code"),
                        "operation": operation,
                        "title": failure.get("title"),
                        "message": (failure.get("message") or "")[:600],
                        "request": f"{request.get('method', '')} {request.get('uri', '')}"[:300],
                        "request_body": str(body)[:300] if body else None,
                        "response": f"{response.get('status_code')} {str(answer)[:300]}" if response else None,
                        "hard": check.get("name") in HARD_CHECKS,
                        "occurrences": 1,
                    }
                )
                seen[key] = failures[-1]
    return {"requests": requests, "statuses": dict(statuses), "failures": failures}


# ---------------------------------------------------------------------------------------------------
# 2. Request-level abuse with raw sockets.


def request_bytes(method, path, body=b"", headers=None, content_length=True):
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{INGEST_PORT}"]
    for name, value in (headers or {}).items():
        lines.append(f"{name}: {value}")
    if content_length and body is not None:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b"")


def oversized_bodies():
    """Above each route's limit (MAX_BODY_BYTES 65,536 for events; 16,384 for ad networks; 262,144 for
    advertised apps and schemas; Services/ingest) with Content-Length, chunked, and a declared size far
    beyond what is sent."""
    category = "oversized"
    app_auth = {"Authorization": "Bearer " + APP_KEY, "Content-Type": "application/json"}
    admin_auth = {"Authorization": "Bearer " + ADMIN_TOKEN, "Content-Type": "application/json"}
    routes = [
        ("POST", "/v1/impressions", 65_536, {"Content-Type": "application/json"}),
        ("POST", "/v1/conversions", 65_536, app_auth),
        ("POST", "/v1/conversion-value-updates", 65_536, app_auth),
        ("POST", "/v1/activity", 65_536, app_auth),
        ("POST", "/v1/conversion-values/evaluate", 65_536, app_auth),
        ("PUT", "/v1/admin/ad-networks/oversized.net", 16_384, admin_auth),
        ("PUT", "/v1/admin/publisher-apps/91001", 65_536, admin_auth),
        ("PUT", f"/v1/admin/advertised-apps/{FUZZ_APP}", 262_144, admin_auth),
        ("PUT", f"/v1/admin/advertised-apps/{FUZZ_APP}/conversion-value-schema", 262_144, admin_auth),
    ]
    for method, path, limit, headers in routes:
        body = b"{" + b" " * limit + b"}"  # valid JSON, one byte too many... plus one
        status, h, data, _, _ = raw([request_bytes(method, path, body, headers)], wait=10)
        observe(
            category,
            f"{method} {path}: {len(body)} bytes with Content-Length",
            status,
            h,
            data,
            expect=(413, "body-too-large"),
        )
        # Chunked, no Content-Length: the limit must hold while streaming.
        chunk = b"{" + b" " * (limit + 10) + b"}"
        chunked = request_bytes(method, path, None, {**headers, "Transfer-Encoding": "chunked"}, content_length=False)
        chunked += b"%x\r\n%s\r\n0\r\n\r\n" % (len(chunk), chunk)
        status, h, data, _, _ = raw([chunked], wait=10)
        observe(
            category, f"{method} {path}: {len(chunk)} bytes chunked", status, h, data, expect=(413, "body-too-large")
        )
    # Declared 1 TB, 70 KB sent: refused once the limit is crossed, not after a terabyte.
    head = request_bytes(
        "POST",
        "/v1/impressions",
        None,
        {"Content-Type": "application/json", "Content-Length": str(10**12)},
        content_length=False,
    )
    status, h, data, _, _ = raw([head, b"{" + b" " * 70_000], wait=10)
    observe(category, "Content-Length 10^12 declared, 70 KB sent", status, h, data, expect=(413, "body-too-large"))
    # 16 MiB in one go, four times (memory: the body must not be buffered beyond the limit).
    for n in range(4):
        body = b'{"device-identifier":"' + b"x" * (16 * 1024 * 1024) + b'"}'
        status, h, data, _, _ = raw(
            [request_bytes("POST", "/v1/impressions", body, {"Content-Type": "application/json"})], wait=20
        )
        observe(category, f"16 MiB body #{n + 1}", status, h, data, expect=(413, "body-too-large"))
    # Exactly at the limit is not too large: a shape error, not 413.
    body = b"{" + b" " * (65_536 - 2) + b"}"
    status, h, data, _, _ = raw(
        [request_bytes("POST", "/v1/impressions", body, {"Content-Type": "application/json"})], wait=10
    )
    observe(category, "exactly 65,536 bytes", status, h, data, expect=(400, "invalid-json"))
    # A gzip bomb label on a small body: ingest does not inflate, so it is just bytes that are not JSON.
    status, h, data, _, _ = raw(
        [
            request_bytes(
                "POST",
                "/v1/impressions",
                b"\x1f\x8b\x08\x00" + b"\x00" * 100,
                {"Content-Type": "application/json", "Content-Encoding": "gzip"},
            )
        ]
    )
    observe(category, "Content-Encoding gzip", status, h, data, expect={400, 415})


def slow_requests():
    """Slowloris: headers a byte at a time, a body a byte at a time, a declared body never finished.
    Held concurrently with valid traffic; whether and when the server gives up on them is reported."""
    category = "slow"
    results = {}

    def slow_headers(n):
        # 20 ms per byte: about 3 s for the request line and headers, then a valid small request.
        jws = sign_jws(NETWORK_KEY, {"alg": "ES256", "kid": NETWORK}, impression_payload(NETWORK, APP, PUBLISHER))
        payload = json.dumps(impression_body(jws, f"slow-headers-{n}")).encode()
        data = request_bytes("POST", "/v1/impressions", payload, {"Content-Type": "application/json"})
        split = data.index(b"\r\n\r\n") + 4
        chunks = [bytes([b]) for b in data[:split]] + [data[split:]]
        status, h, body, _, _ = raw(chunks, delay=args.hold / len(chunks), wait=15)
        observe(category, "headers a byte at a time", status, h, body, expect=202)
        if status == 202:
            stats["allowed_verified"][json.loads(body)["event-identifier"]] = (
                "slow headers (a valid impression, sent slowly)"
            )

    def slow_body(n):
        jws = sign_jws(NETWORK_KEY, {"alg": "ES256", "kid": NETWORK}, impression_payload(NETWORK, APP, PUBLISHER))
        payload = json.dumps(impression_body(jws, f"slow-body-{n}")).encode()
        head = request_bytes(
            "POST",
            "/v1/impressions",
            None,
            {"Content-Type": "application/json", "Content-Length": str(len(payload))},
            content_length=False,
        )
        status, h, body, _, _ = raw([head] + [bytes([b]) for b in payload], delay=args.hold / len(payload), wait=15)
        observe(category, "body a byte at a time", status, h, body, expect=202)
        if status == 202:
            stats["allowed_verified"][json.loads(body)["event-identifier"]] = (
                "slow body (a valid impression, sent slowly)"
            )

    def unfinished(n, partial_headers):
        # Content-Length 1000, 10 bytes sent, then silence: does the server ever close?
        sock = socket.create_connection(("127.0.0.1", INGEST_PORT), timeout=args.hold + 5)
        if partial_headers:
            sock.sendall(b"POST /v1/impressions HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        else:
            sock.sendall(
                request_bytes(
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
            sock.settimeout(args.hold)
            data = sock.recv(65536)
            closed_after = time.time() - started
            status, h, body = parse_raw_response(data)
            if status is not None:
                observe(category, "unfinished request answered", status, h, body)
        except TimeoutError:
            pass
        finally:
            sock.close()
        key = "partial headers" if partial_headers else "Content-Length never completed"
        with lock:
            stats["inputs"][category] += 1
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
            stats["findings"].append(
                {
                    "kind": "no read timeout",
                    "case": key,
                    "detail": f"{still_open}/{len(closes)} connections still open after {args.hold:.0f} s of silence: "
                    "ingest never times out an unfinished request (Hummingbird's HTTP1Channel idleTimeout "
                    "is nil unless set; PipelineService.assemble passes no server configuration)",
                }
            )
    return results


def header_floods():
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
            data = request_bytes("POST", path, b"{}", {"Content-Type": "application/json", **headers})
        status, h, body, closed, _ = raw([data], wait=10)
        # Parser-level refusals (431/400 from NIO) come without a route: protocol level.
        observe(category, name, status, h, body, expect={400, 401, 413, 414, 431}, protocol_level=True)


def malformed_http():
    category = "malformed"
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
        (
            "percent-encoded NUL",
            b"GET /v1/admin/ad-networks/a%00b HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
            + ADMIN_TOKEN.encode()
            + b"\r\n\r\n",
        ),
        (
            "invalid percent-encoding",
            b"GET /v1/admin/ad-networks/%zz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
            + ADMIN_TOKEN.encode()
            + b"\r\n\r\n",
        ),
        (
            "UTF-8 overlong in path",
            b"GET /v1/admin/advertised-apps/%c0%ae%c0%ae HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
            + ADMIN_TOKEN.encode()
            + b"\r\n\r\n",
        ),
        (
            "raw bytes >0x7F in path",
            b"GET /v1/admin/ad-networks/\xff\xfe HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
            + ADMIN_TOKEN.encode()
            + b"\r\n\r\n",
        ),
        (
            "item id beyond UInt64",
            b"GET /v1/admin/advertised-apps/99999999999999999999999/rejections HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
            + ADMIN_TOKEN.encode()
            + b"\r\n\r\n",
        ),
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
            request_bytes("POST", "/v1/impressions", b"\xef\xbb\xbf{}", {"Content-Type": "application/json"}),
        ),
        (
            "JSON object nested 10,000 deep",
            request_bytes(
                "POST",
                "/v1/impressions",
                b'{"a":' * 10_000 + b"1" + b"}" * 10_000,
                {"Content-Type": "application/json"},
            ),
        ),
        (
            "JSON array nested 30,000 deep",
            request_bytes(
                "POST", "/v1/impressions", b"[" * 30_000 + b"]" * 30_000, {"Content-Type": "application/json"}
            ),
        ),
        (
            "invalid UTF-8 in JSON",
            request_bytes(
                "POST",
                "/v1/impressions",
                b'{"device-identifier":"\xff\xfe","impression":"a.b.c","interaction":{"type":"click","time":1,"loaded-at":1}}',
                {"Content-Type": "application/json"},
            ),
        ),
        (
            "lone surrogate escape",
            request_bytes(
                "POST",
                "/v1/impressions",
                b'{"device-identifier":"\\ud800","impression":"a.b.c","interaction":{"type":"click","time":1,"loaded-at":1}}',
                {"Content-Type": "application/json"},
            ),
        ),
        (
            "number 1e400",
            request_bytes(
                "POST",
                "/v1/impressions",
                b'{"device-identifier":"d","impression":"a.b.c","interaction":{"type":"click","time":1e400,"loaded-at":1}}',
                {"Content-Type": "application/json"},
            ),
        ),
        (
            "time beyond Int64",
            request_bytes(
                "POST",
                "/v1/impressions",
                b'{"device-identifier":"d","impression":"a.b.c","interaction":{"type":"click","time":99999999999999999999,"loaded-at":1}}',
                {"Content-Type": "application/json"},
            ),
        ),
        (
            "duplicate keys",
            request_bytes(
                "POST",
                "/v1/impressions",
                b'{"device-identifier":"d","device-identifier":"e","impression":"a.b.c","interaction":{"type":"click","time":1,"loaded-at":1}}',
                {"Content-Type": "application/json"},
            ),
        ),
        (
            "Int64.min times",
            request_bytes(
                "POST",
                "/v1/impressions",
                b'{"device-identifier":"d","impression":"a.b.c","interaction":{"type":"view","time":-9223372036854775808,"begin":9223372036854775807}}',
                {"Content-Type": "application/json"},
            ),
        ),
        (
            "XML entity bomb as Info.plist",
            request_bytes(
                "PUT",
                f"/v1/admin/advertised-apps/{FUZZ_APP}",
                b'<?xml version="1.0"?><!DOCTYPE p [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;"><!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;"><!ENTITY f "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;"><!ENTITY g "&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;">]><plist version="1.0"><dict><key>CFBundleName</key><string>&g;</string></dict></plist>',
                {"Content-Type": "application/xml", "Authorization": "Bearer " + ADMIN_TOKEN},
            ),
        ),
        (
            "XML external entity as Info.plist",
            request_bytes(
                "PUT",
                f"/v1/admin/advertised-apps/{FUZZ_APP}",
                b'<?xml version="1.0"?><!DOCTYPE p [<!ENTITY x SYSTEM "file:///etc/passwd">]><plist version="1.0"><dict><key>AttributionCopyEndpoint</key><string>&x;</string></dict></plist>',
                {"Content-Type": "application/x-plist", "Authorization": "Bearer " + ADMIN_TOKEN},
            ),
        ),
        (
            "binary plist header",
            request_bytes(
                "PUT",
                f"/v1/admin/advertised-apps/{FUZZ_APP}",
                b"bplist00" + os.urandom(200),
                {"Content-Type": "application/x-plist", "Authorization": "Bearer " + ADMIN_TOKEN},
            ),
        ),
    ]
    for name, data in cases:
        status, h, body, closed, _ = raw([data], wait=5)
        observe(category, name, status, h, body, protocol_level=True)
        if name.startswith("XML") and status == 200:
            stats["unexpected"].append(
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
    sock = socket.create_connection(("127.0.0.1", INGEST_PORT), timeout=5)
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
    with lock:
        stats["inputs"][category] += 1
    if answers[:2] != [b"200", b"200"]:
        stats["unexpected"].append(
            {"category": category, "case": "pipelined", "expected": "200, 200, then an error", "got": str(answers)}
        )


def idle_connections():
    """Hundreds of connections that send nothing, held while valid traffic flows; then how many the
    server closed on its own, and /health latency while they are open."""
    category = "idle"
    socks = []
    refused = 0
    for _ in range(args.idle):
        try:
            socks.append(socket.create_connection(("127.0.0.1", INGEST_PORT), timeout=5))
        except OSError:
            refused += 1
    with lock:
        stats["inputs"][category] += args.idle
    fds = open_fds(children["ingest"].pid)
    started = time.time()
    status, h, body = http("GET", "/health", timeout=10)
    health_ms = (time.time() - started) * 1000
    observe(category, "/health with idle connections open", status, h, body, expect=200)
    time.sleep(args.hold)
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
        "hold_s": args.hold,
    }
    if closed == 0 and socks:
        stats["findings"].append(
            {
                "kind": "no idle timeout",
                "case": f"{len(socks)} idle connections",
                "detail": f"none closed by ingest after {args.hold:.0f} s; each holds a descriptor, so enough of them "
                "(ulimit -n) lock out every client",
            }
        )
    return result


def replays():
    """The same signed impression twice: the second is refused by the verifier as impression-replayed.
    With the same Idempotency-Key, ingest answers the first event id and adds nothing."""
    category = "replay"
    for n in range(5):
        jws = sign_jws(NETWORK_KEY, {"alg": "ES256", "kid": NETWORK}, impression_payload(NETWORK, APP, PUBLISHER))
        first_body = impression_body(jws, f"replay-{n}")
        status, data = call(category, "original", "POST", "/v1/impressions", first_body, expect=202)
        first = json.loads(data)["event-identifier"]
        stats["allowed_verified"][first] = "replay original (valid)"
        # Let the verifier see the original first: a replay is only a replay after it.
        deadline = time.time() + 20
        while time.time() < deadline and first not in verdicts_so_far():
            time.sleep(0.1)
        variants = [
            ("same body again", first_body, {}),
            ("same JWS, another device", impression_body(jws, f"replay-other-{n}"), {}),
            (
                "same JWS, view interaction",
                {**first_body, "interaction": {"type": "view", "begin": now_ms() - 5000, "time": now_ms()}},
                {},
            ),
        ]
        for name, body, headers in variants:
            status, data = call(category, name, "POST", "/v1/impressions", body, headers, expect=202)
            if status == 202:
                event = json.loads(data)["event-identifier"]
                stats["hostile_event_ids"][event] = f"replay: {name}"
                stats["expected_verdicts"][event] = (f"replay: {name}", "impression-replayed")
    # Idempotency-Key: the retry gets the first answer; another body with the key gets 422.
    jws = sign_jws(NETWORK_KEY, {"alg": "ES256", "kid": NETWORK}, impression_payload(NETWORK, APP, PUBLISHER))
    key = "hostile-" + uuid.uuid4().hex
    body = impression_body(jws, "idempotent-device")
    _, first = call(
        category, "Idempotency-Key first", "POST", "/v1/impressions", body, {"Idempotency-Key": key}, expect=202
    )
    _, again = call(
        category, "Idempotency-Key retry", "POST", "/v1/impressions", body, {"Idempotency-Key": key}, expect=202
    )
    first_id = json.loads(first)["event-identifier"]
    stats["allowed_verified"][first_id] = "idempotent original (valid)"
    if json.loads(again).get("event-identifier") != first_id:
        stats["unexpected"].append(
            {
                "category": category,
                "case": "Idempotency-Key retry",
                "expected": f"event id {first_id}",
                "got": again[:200].decode(),
            }
        )
    # Impressions are scoped by device (they have no caller key): same device, another body.
    other = dict(body, interaction={"type": "click", "time": now_ms() + 1, "loaded-at": now_ms() - 400})
    call(
        category,
        "Idempotency-Key with another body",
        "POST",
        "/v1/impressions",
        other,
        {"Idempotency-Key": key},
        expect=(422, "idempotency-key-reused"),
    )


def admin_auth():
    """Every admin route without a token, with a wrong one, and with near misses; event routes with
    missing, forged and foreign app keys."""
    category = "auth"
    routes = [
        ("PUT", "/v1/admin/ad-networks/auth.net", {"public-key": "x", "postback-url": "https://example.com/p"}),
        ("GET", f"/v1/admin/ad-networks/{NETWORK}", None),
        ("GET", f"/v1/admin/ad-networks/{NETWORK}/rejections", None),
        ("PUT", "/v1/admin/publisher-apps/91002", {"AdNetworkIdentifiers": [NETWORK]}),
        ("PUT", f"/v1/admin/advertised-apps/{APP}", {}),
        ("POST", f"/v1/admin/advertised-apps/{APP}/keys", None),
        ("GET", f"/v1/admin/advertised-apps/{APP}/rejections", None),
        ("GET", "/v1/admin/dead-letters", None),
        ("POST", "/v1/admin/dead-letters/replay", None),
        ("POST", "/v1/admin/dead-letters/1-0/replay", None),
        ("PUT", f"/v1/admin/advertised-apps/{APP}/conversion-value-schema", {}),
        ("GET", f"/v1/admin/advertised-apps/{APP}/conversion-value-schema", None),
        ("GET", f"/v1/admin/advertised-apps/{APP}/conversion-value-schema/1", None),
        ("DELETE", "/v1/admin/devices/valid-0", None),
    ]
    tokens = [
        ("no token", None),
        ("wrong token", "Bearer wrong"),
        ("token plus a byte", f"Bearer {ADMIN_TOKEN}x"),
        ("token minus a byte", f"Bearer {ADMIN_TOKEN[:-1]}"),
        ("lower-case scheme", f"bearer {ADMIN_TOKEN}"),
        ("Basic scheme", "Basic " + base64.b64encode(f"admin:{ADMIN_TOKEN}".encode()).decode()),
        ("tab instead of a space", f"Bearer\t{ADMIN_TOKEN}"),
        ("empty bearer", "Bearer "),
        ("two spaces", f"Bearer  {ADMIN_TOKEN}"),
        ("app key", f"Bearer {APP_KEY}"),
        ("token as a query parameter", "query"),
    ]
    for method, path, body in routes:
        for name, value in tokens:
            headers = {}
            request_path = path
            if value == "query":
                request_path = path + f"?token={ADMIN_TOKEN}&access_token={ADMIN_TOKEN}"
            elif value is not None:
                headers["Authorization"] = value
            call(
                category, f"{method} {path}: {name}", method, request_path, body, headers, expect=(401, "unauthorized")
            )
    # With the token: path and query values the routes must refuse with 4xx (the dead-letter id check
    # lets through digit-and-dash strings Redis refuses as stream ids: DeadLetterRoutes).
    admin = {"Authorization": "Bearer " + ADMIN_TOKEN}
    for path in [
        "/v1/admin/dead-letters/99999999999999999999-0/replay",
        "/v1/admin/dead-letters/1-2-3/replay",
        "/v1/admin/dead-letters/-/replay",
        "/v1/admin/dead-letters/1--1/replay",
        "/v1/admin/dead-letters/%C2%BD/replay",
        "/v1/admin/dead-letters/%D9%A1-0/replay",
        "/v1/admin/dead-letters/0-0/replay",
    ]:
        call(category, f"POST {path} (admin)", "POST", path, None, admin, expect={400, 404})
    for query in ["count=-1", "count=0", "count=99999999999999999999", "count=abc", "start=zzz", "count=1&count=2"]:
        call(
            category,
            f"GET /v1/admin/dead-letters?{query} (admin)",
            "GET",
            f"/v1/admin/dead-letters?{query}",
            None,
            admin,
            expect={200, 400},
        )
    for path in [
        f"/v1/admin/advertised-apps/{APP}/conversion-value-schema/0",
        f"/v1/admin/advertised-apps/{APP}/conversion-value-schema/-1",
        f"/v1/admin/advertised-apps/{APP}/conversion-value-schema/99999999999999999999",
        "/v1/admin/devices/" + "d" * 200,
        "/v1/admin/devices/%2A",
        "/v1/admin/devices/a%00b",
    ]:
        method = "DELETE" if "/devices/" in path else "GET"
        call(category, f"{method} {path[:80]} (admin)", method, path, None, admin, expect={200, 400, 404})
    # The admin token must not work as an app key, nor an app key of another app.
    conversion = {
        "device-identifier": "auth-d",
        "advertised-item-identifier": APP,
        "conversion-type": "download",
        "time": now_ms(),
    }
    for name, value, expect in [
        ("no app key", None, (401, "missing-app-key")),
        ("forged app key", "Bearer ak_forged", (401, "invalid-app-key")),
        ("admin token as app key", f"Bearer {ADMIN_TOKEN}", (401, "invalid-app-key")),
        ("another app's key", f"Bearer {FUZZ_APP_KEY}", (403, "app-key-mismatch")),
        ("100 KB app key", "Bearer " + "k" * 100_000, {401, 431, 400}),
    ]:
        for path, body in [
            ("/v1/conversions", conversion),
            (
                "/v1/conversion-value-updates",
                {
                    "device-identifier": "auth-d",
                    "advertised-item-identifier": APP,
                    "time": now_ms(),
                    "fineConversionValue": 3,
                },
            ),
            (
                "/v1/activity",
                {"device-identifier": "auth-d", "advertised-item-identifier": APP, "time": now_ms(), "sessions": 1},
            ),
        ]:
            headers = {"Authorization": value} if value else {}
            # A 100 KB header is refused by the HTTP parser before any route: protocol level.
            call(
                category,
                f"POST {path}: {name}",
                "POST",
                path,
                body,
                headers,
                expect=expect,
                protocol_level="100 KB" in name,
            )


def postback_urls():
    """Registration refuses postback URLs (and copy endpoints) aimed at the operator's own network.
    `literal`: the address is in the URL itself (or a localhost name): registration must refuse.
    `dns`: only DNS says the name is private; registration is DNS-free by design (AdminRoutes), the
    dispatcher resolves before every POST, so an acceptance here is reported, not a violation."""
    category = "postback-url"
    public_key = (
        NETWORK_KEY.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    cases = [
        ("literal", "https://169.254.169.254/latest/meta-data/"),
        ("literal", "https://169.254.169.254:443/"),
        ("literal", "https://10.0.0.1/p"),
        ("literal", "https://10.255.255.255/p"),
        ("literal", "https://172.16.0.1/p"),
        ("literal", "https://192.168.1.1/p"),
        ("literal", "https://127.0.0.1/p"),
        ("literal", f"https://127.0.0.1:{RECEIVER_PORT + 1}/p"),
        ("literal", f"http://127.0.0.1:{RECEIVER_PORT + 1}/p"),
        ("literal", "https://127.8.9.10/p"),
        ("literal", "https://0.0.0.0/p"),
        ("literal", "https://100.64.0.1/p"),
        ("literal", "https://[::1]/p"),
        ("literal", "https://[::]/p"),
        ("literal", "https://[0:0:0:0:0:0:0:1]/p"),
        ("literal", "https://[fe80::1]/p"),
        ("literal", "https://[fd00::1]/p"),
        ("literal", "https://[::ffff:169.254.169.254]/p"),
        ("literal", "https://[::ffff:7f00:1]/p"),
        ("literal", "https://[64:ff9b::a9fe:a9fe]/p"),
        ("literal", "https://localhost/p"),
        ("literal", "https://LOCALHOST/p"),
        ("literal", "https://api.localhost/p"),
        ("literal", "https://localhost:8443/p"),
        # Other spellings of an IPv4 literal that getaddrinfo/inet_aton (and browsers) read as 127.0.0.1 / 169.254.169.254:
        ("literal", "https://2130706433/p"),
        ("literal", "https://0x7f000001/p"),
        ("literal", "https://0177.0.0.1/p"),
        ("literal", "https://127.1/p"),
        ("literal", "https://169.254.169.254./p"),
        ("literal", "https://localhost./p"),
        ("literal", "https://[fe80::1%25eth0]/p"),
        ("literal", "https://%31%32%37.0.0.1/p"),
        # Not https, not a URL, hidden hosts:
        ("literal", "http://example.com/p"),
        ("literal", "HTTP://example.com/p"),
        ("literal", "ftp://example.com/p"),
        ("literal", "file:///etc/passwd"),
        ("literal", "gopher://127.0.0.1:6379/_INFO"),
        ("literal", "https:/example.com/p"),
        ("literal", "//example.com/p"),
        ("literal", "https://user@169.254.169.254/p"),
        ("literal", "https://example.com@127.0.0.1/p"),
        ("literal", "https://127.0.0.1#@example.com/p"),
        ("literal", "https://example.com:0/p"),
        ("literal", "https://example.com:99999/p"),
        ("literal", "https:// example.com/p"),
        ("literal", "https://exa\u0000mple.com/p"),
        ("literal", ""),
        ("literal", "x" * 10_000),
        ("dns", f"https://{socket.gethostname()}/p"),
        ("dns", "https://localhost.localdomain/p"),
        ("dns", "https://ip6-localhost/p"),
        ("dns", "https://metadata.google.internal/computeMetadata/v1/"),
        ("dns", "https://127.0.0.1.nip.io/p"),
        ("dns", "https://\u24db\u24de\u24d2\u24d0\u24db\u24d7\u24de\u24e2\u24e3/p"),
    ]
    for n, (kind, url) in enumerate(cases):
        path = f"/v1/admin/ad-networks/ssrf-{n}.net"
        status, h, data = http(
            "PUT", path, {"public-key": public_key, "postback-url": url}, {"Authorization": "Bearer " + ADMIN_TOKEN}
        )
        reason = observe(category, f"postback-url {url[:80]!r}", status, h, data, expect=None)
        if status != 400:
            entry = {
                "category": category,
                "case": f"postback-url {url[:80]!r} ({kind})",
                "expected": "400 destination-*",
                "got": status,
                "reason": reason,
                "body": data[:160].decode("utf-8", "replace"),
            }
            (stats["unexpected"] if kind == "literal" else stats["findings"]).append(
                entry if kind == "literal" else {"kind": "accepted at registration (DNS-only private name)", **entry}
            )
    # The same rules for the advertiser's copy endpoint.
    for url in [
        "https://169.254.169.254",
        "https://10.1.2.3",
        "https://[::1]",
        "http://example.com",
        "https://localhost",
        "https://2130706433",
        "file:///etc/passwd",
    ]:
        status, h, data = http(
            "PUT",
            "/v1/admin/advertised-apps/91003",
            {"AttributionCopyEndpoint": url},
            {"Authorization": "Bearer " + ADMIN_TOKEN},
        )
        reason = observe(category, f"AttributionCopyEndpoint {url!r}", status, h, data)
        if status != 400:
            stats["unexpected"].append(
                {
                    "category": category,
                    "case": f"AttributionCopyEndpoint {url!r}",
                    "expected": "400 destination-*",
                    "got": status,
                    "reason": reason,
                    "body": data[:160].decode("utf-8", "replace"),
                }
            )
    # Control: the allow-listed receiver (host:port) is accepted.
    status, h, data = http(
        "PUT",
        "/v1/admin/ad-networks/ssrf-control.net",
        {"public-key": public_key, "postback-url": f"http://127.0.0.1:{RECEIVER_PORT}/postbacks"},
        {"Authorization": "Bearer " + ADMIN_TOKEN},
    )
    observe(category, "allow-listed receiver (control)", status, h, data, expect=200)


def forged_impressions():
    """Impressions ingest accepts (right shape) that the verifier must refuse: each accepted id is
    checked against `rejected` at the end, with the reason."""
    category = "forged-impressions"
    stranger = ec.generate_private_key(ec.SECP256R1())
    header = {"alg": "ES256", "kid": NETWORK}
    cases = [
        (
            "signed by another key",
            sign_jws(stranger, header, impression_payload(NETWORK, APP, PUBLISHER)),
            "invalid-signature",
        ),
        (
            "alg none",
            b64(b'{"alg":"none","kid":"%s"}' % NETWORK.encode())
            + "."
            + b64(json.dumps(impression_payload(NETWORK, APP, PUBLISHER)).encode())
            + ".AA",
            "unsupported-algorithm",
        ),
        (
            "kid of an unknown network",
            sign_jws(
                NETWORK_KEY, {"alg": "ES256", "kid": "nobody.net"}, impression_payload("nobody.net", APP, PUBLISHER)
            ),
            "unknown-ad-network",
        ),
        (
            "kid differs from the payload's network",
            sign_jws(NETWORK_KEY, {"alg": "ES256", "kid": "other.net"}, impression_payload(NETWORK, APP, PUBLISHER)),
            "key-identifier-mismatch",
        ),
        ("payload tampered", None, "invalid-signature"),
        ("31 days old", None, "impression-expired"),
        ("an hour in the future", None, "impression-from-future"),
        ("garbage parts", "e30.e30.AAAA", None),
    ]
    for name, jws, reason in cases:
        if name == "payload tampered":
            good = sign_jws(NETWORK_KEY, header, impression_payload(NETWORK, APP, PUBLISHER, source=1))
            parts = good.split(".")
            jws = (
                parts[0]
                + "."
                + b64(json.dumps(impression_payload(NETWORK, APP, PUBLISHER, source=2)).encode())
                + "."
                + parts[2]
            )
        if name in ("31 days old", "an hour in the future"):
            payload = impression_payload(NETWORK, APP, PUBLISHER)
            payload["timestamp"] = now_ms() + (-31 * 86_400_000 if "old" in name else 3_600_000)
            jws = sign_jws(NETWORK_KEY, header, payload)
        for n in range(3):
            status, data = call(
                category, name, "POST", "/v1/impressions", impression_body(jws, f"forged-{n}"), expect=202
            )
            if status == 202:
                event = json.loads(data)["event-identifier"]
                stats["hostile_event_ids"][event] = f"forged: {name}"
                if reason:
                    stats["expected_verdicts"][event] = (f"forged: {name}", reason)


def forged_network_flood(redis, count=2000):
    """Issue 18, finding 4: anonymous impressions naming unregistered ad networks (a random id each, a
    random key) and the registered network (a stranger's key), at the size a real impression has. Run
    before valid traffic starts, so Redis's growth is theirs alone: measured once the verifier refused
    them all. Target: ≤ 600 bytes per request averaged, and no key naming an unregistered id. What
    stays: each refusal's entry on `rejected` (trimmed after STREAM_RETENTION_HOURS), the registered
    network's unsigned list (the last 100) and its count; the events themselves leave `events` as they
    are refused."""
    category = "forged-network-flood"

    def used_memory():
        info = redis("INFO", "memory").decode()
        return int(re.search(r"used_memory:(\d+)", info).group(1))

    def keys():
        found, cursor = set(), "0"
        while True:
            cursor, batch = redis("SCAN", cursor, "COUNT", 1000)
            found.update(k.decode() for k in batch)
            if cursor == b"0":
                return found

    before_keys, before = keys(), used_memory()
    unregistered = []
    for n in range(count):
        key = ec.generate_private_key(ec.SECP256R1())
        if n % 2:
            network = f"forged-{uuid.uuid4().hex[:12]}.adattributionkit"
            unregistered.append(network)
        else:
            network = NETWORK
        jws = sign_jws(key, {"alg": "ES256", "kid": network}, impression_payload(network, APP, PUBLISHER))
        status, data = call(
            category,
            "forged signature" if network == NETWORK else "unregistered network",
            "POST",
            "/v1/impressions",
            impression_body(jws, f"flood-{uuid.uuid4().hex}"),
            expect=202,
        )
        if status == 202:
            event = json.loads(data)["event-identifier"]
            stats["hostile_event_ids"][event] = (
                f"flood: {'forged signature' if network == NETWORK else 'unregistered network'}"
            )
            stats["expected_verdicts"][event] = (
                stats["hostile_event_ids"][event],
                "invalid-signature" if network == NETWORK else "unknown-ad-network",
            )
    deadline = time.time() + 60
    while time.time() < deadline and not redis.group_done("events", "verifier"):
        time.sleep(0.2)
    time.sleep(1)  # the refusal logs are written just after the verifier's commit
    after, after_keys = used_memory(), keys()
    new_keys = sorted(after_keys - before_keys)
    naming_unregistered = [k for k in new_keys if any(network in k for network in unregistered)]
    per_request = (after - before) / count

    def usage(stream):
        return sum(redis("MEMORY", "USAGE", name, "SAMPLES", "0") or 0 for name in partitioned(stream))

    result = {
        "requests": count,
        "redis_bytes_before": before,
        "redis_bytes_after": after,
        "events_bytes_after": usage("events"),
        "rejected_bytes_after": usage("rejected"),
        "bytes_per_request": round(per_request),
        "new_keys": new_keys[:40],
        "new_key_count": len(new_keys),
        "keys_naming_an_unregistered_id": len(naming_unregistered),
    }
    if naming_unregistered:
        violations_early.append(
            f"forged-network flood: {len(naming_unregistered)} keys name an unregistered id ({naming_unregistered[:3]})"
        )
    if per_request > 600:
        violations_early.append(
            f"forged-network flood: {per_request:.0f} Redis bytes per forged request (target ≤ 600)"
        )
    log(
        f"forged-network flood: {count} requests, {per_request:.0f} Redis bytes each, {len(new_keys)} new keys "
        f"({len(naming_unregistered)} naming an unregistered id)"
    )
    return result


violations_early = []


def extreme_values():
    """Properly signed impressions and app-key-authenticated conversions, updates and activity whose
    times and counts sit at the edges of Int64: what a hostile device (it holds the JWS it was shown
    and the app's key) can send. The verifier computes `time - loaded-at` and `time - begin`
    (ImpressionRules.check); attribution-winner and the scheduler add windows to conversion times.
    None of it may crash a stage; the impressions must be refused, not verified."""
    category = "extreme-values"
    high, low = 2**63 - 1, -(2**63)
    t = now_ms()
    # Those that cannot overflow first, one at a time, each waiting for its verdict: their outcome is
    # then their own, not that of a batch a later one takes down. The overflowing ones go last.
    interactions = [
        ("view from 1 to Int64.max", {"type": "view", "begin": 1, "time": high}, None),
        ("click at -1000, loaded at -2000", {"type": "click", "time": -1000, "loaded-at": -2000}, None),
        (
            "click in the year 275760",
            {"type": "click", "time": 8_640_000_000_000_000, "loaded-at": 8_640_000_000_000_000 - 1},
            None,
        ),
        ("click at Int64.max, loaded at -1", {"type": "click", "time": high, "loaded-at": -1}, "click-too-late"),
        ("click at Int64.min, loaded at 1", {"type": "click", "time": low, "loaded-at": 1}, "click-too-late"),
        ("click now, loaded at Int64.min", {"type": "click", "time": t, "loaded-at": low}, "click-too-late"),
        ("view from Int64.min to now", {"type": "view", "begin": low, "time": t}, "view-too-short"),
    ]

    def wait_verdict(event, seconds=6):
        deadline = time.time() + seconds
        while time.time() < deadline and event not in verdicts_so_far():
            time.sleep(0.2)

    overflowing = []
    for name, interaction, reason in interactions:
        jws = sign_jws(NETWORK_KEY, {"alg": "ES256", "kid": NETWORK}, impression_payload(NETWORK, APP, PUBLISHER))
        body = {"device-identifier": f"extreme-{uuid.uuid4().hex[:8]}", "impression": jws, "interaction": interaction}
        if reason:
            overflowing.append((name, body, reason))
            continue
        status, data = call(category, f"impression: {name}", "POST", "/v1/impressions", body, expect={202, 400})
        if status == 202:
            wait_verdict(json.loads(data)["event-identifier"])
    # Conversions and what follows them, for the fuzzer's app (its own key), each on a device with a
    # real impression so that they are attributed and reach the scheduler.
    auth = {"Authorization": "Bearer " + FUZZ_APP_KEY}
    events = [
        ("conversion at Int64.max", "/v1/conversions", {"conversion-type": "download", "time": high}),
        ("conversion at Int64.min", "/v1/conversions", {"conversion-type": "download", "time": low}),
        (
            "conversion at Int64.max - 1 day",
            "/v1/conversions",
            {"conversion-type": "download", "time": high - 86_400_000},
        ),
        ("re-engagement at Int64.max", "/v1/conversions", {"conversion-type": "re-engagement", "time": high}),
        ("conversion at -1", "/v1/conversions", {"conversion-type": "download", "time": -1}),
        (
            "update at Int64.max",
            "/v1/conversion-value-updates",
            {"time": high, "fineConversionValue": 5, "lockPostback": True},
        ),
        ("update at Int64.min", "/v1/conversion-value-updates", {"time": low, "fineConversionValue": 5}),
        ("activity: Int64.max sessions", "/v1/activity", {"time": t, "sessions": high}),
        ("activity: Int64.max sessions twice", "/v1/activity", {"time": t + 1, "sessions": high}),
        ("activity: Int64.max event count", "/v1/activity", {"time": t, "events": {"purchase": high}}),
        ("activity: revenue 1e308", "/v1/activity", {"time": t, "revenue": {"USD": 1e308}}),
        ("activity: negative sessions", "/v1/activity", {"time": t, "sessions": -5}),
        ("evaluate: Int64.max sessions", "/v1/conversion-values/evaluate", {"sessions": high, "window": 0}),
    ]
    device = f"extreme-device-{uuid.uuid4().hex[:8]}"
    jws = sign_jws(NETWORK_KEY, {"alg": "ES256", "kid": NETWORK}, impression_payload(NETWORK, FUZZ_APP, PUBLISHER))
    _, data = call(
        category,
        "impression for the fuzzer's app (valid)",
        "POST",
        "/v1/impressions",
        impression_body(jws, device),
        expect=202,
    )
    stats["allowed_verified"][json.loads(data)["event-identifier"]] = "valid impression for the extreme-values device"
    for name, path, fields in events:
        body = {"device-identifier": device, "advertised-item-identifier": FUZZ_APP, **fields}
        status, data = call(category, name, "POST", path, body, auth)
        if status == 202:
            wait_verdict(json.loads(data)["event-identifier"])
    time.sleep(3)  # past CONVERSION_SETTLE_MS: attribution and scheduling happen now
    for name, body, reason in overflowing:
        status, data = call(category, f"impression: {name}", "POST", "/v1/impressions", body, expect={202, 400})
        if status == 202:
            stats["expected_verdicts"][json.loads(data)["event-identifier"]] = (f"extreme: {name}", reason)
    time.sleep(2)


def verdicts_so_far():
    """Ids the verifier has decided (verified or rejected) so far; cheap enough for the replay loop."""
    redis = Redis(REDIS_PORT)
    ids = {e.get("id") for e in redis.stream("verified")}
    ids |= {e.get("body", {}).get("event-identifier") for e in redis.stream("rejected")}
    redis.sock.close()
    return ids


# ---------------------------------------------------------------------------------------------------


def main():
    global \
        INGEST_PORT, \
        ADMIN_PORT, \
        REDIS_PORT, \
        RECEIVER_PORT, \
        ADMIN_TOKEN, \
        APP_KEY, \
        FUZZ_APP_KEY, \
        NETWORK_KEY, \
        NETWORK, \
        APP, \
        PUBLISHER, \
        FUZZ_APP
    started = time.time()
    violations = []
    report = {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "options": vars(args)}

    # Copies of the binaries: whoever rebuilds BIN meanwhile does not change what runs here.
    bin_dir = os.path.join(OUT, "bin")
    os.makedirs(bin_dir, exist_ok=True)
    for name in SERVICES + ["attribution"]:
        shutil.copy2(os.path.join(args.bin, name), os.path.join(bin_dir, name))

    REDIS_PORT = free_port()
    os.makedirs(os.path.join(OUT, "redis"), exist_ok=True)
    start(
        "redis",
        [
            "redis-server",
            "--port",
            str(REDIS_PORT),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "yes",
            "--dir",
            os.path.join(OUT, "redis"),
        ],
    )
    deadline = time.time() + 10
    while True:
        try:
            Redis(REDIS_PORT)("PING")
            break
        except OSError:
            if time.time() > deadline:
                raise SystemExit("redis-server did not start") from None
            time.sleep(0.1)
    redis = Redis(REDIS_PORT)

    keys = os.path.join(OUT, "keys")
    keygen(bin_dir, keys, ("pipeline", "pipeline-development"))
    ADMIN_TOKEN = uuid.uuid4().hex + uuid.uuid4().hex
    INGEST_PORT, ADMIN_PORT, RECEIVER_PORT = free_port(), free_port(), free_port()
    ports = {"ingest": INGEST_PORT, "admin": ADMIN_PORT, **{name: free_port() for name in SERVICES[2:]}}
    # Only the receiver's host:port is allow-listed, so every other 127.0.0.1 URL must still be refused.
    common = {
        "REDIS_URL": f"redis://127.0.0.1:{REDIS_PORT}/0",
        "LOG_LEVEL": "warning",
        "HTTP_HOST": "127.0.0.1",
        "POSTBACK_URL_ALLOWLIST": f"127.0.0.1:{RECEIVER_PORT}",
        "CLAIM_IDLE_MS": "5000",
    }
    for name in SERVICES:
        extra = {"HTTP_PORT": str(ports[name])}
        if name == "ingest":
            extra.update(OPERATIONS_HTTP_PORT=str(free_port()))
        if name == "admin":
            extra.update(ADMIN_TOKEN=ADMIN_TOKEN)
        if name == "dispatcher":
            extra.update(
                SIGNING_KEY_FILE=os.path.join(keys, "pipeline.private.pem"),
                DEVELOPMENT_SIGNING_KEY_FILE=os.path.join(keys, "pipeline-development.private.pem"),
            )
        start(name, [f"{bin_dir}/{name}"], {**common, **extra})
    for name in SERVICES:
        deadline = time.time() + 60
        while True:
            try:
                if http("GET", "/ready", timeout=2, port=ports[name])[0] == 200:
                    break
            except OSError:
                pass
            if time.time() > deadline or children[name].poll() is not None:
                raise SystemExit(f"{name} did not become ready; see {OUT}/logs/{name}.log")
            time.sleep(0.1)
    start(
        "receiver",
        [
            f"{bin_dir}/attribution",
            "receiver",
            "--port",
            str(RECEIVER_PORT),
            "--jwks-url",
            f"http://127.0.0.1:{INGEST_PORT}/.well-known/jwks.json",
            "--output",
            os.path.join(OUT, "postbacks.jsonl"),
        ],
    )
    log(f"redis :{REDIS_PORT}, ingest :{INGEST_PORT}, receiver :{RECEIVER_PORT}; logs in {OUT}/logs")

    # The campaign valid traffic runs against; ids far from the small numbers fuzzers like.
    admin = {"Authorization": "Bearer " + ADMIN_TOKEN}
    NETWORK, APP, PUBLISHER, FUZZ_APP = "valid.hostile-run", 7_345_001, 7_345_002, 7_345_003
    NETWORK_KEY = ec.generate_private_key(ec.SECP256R1())
    pem = (
        NETWORK_KEY.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    for method, path, body in [
        (
            "PUT",
            f"/v1/admin/ad-networks/{NETWORK}",
            {"public-key": pem, "postback-url": f"http://127.0.0.1:{RECEIVER_PORT}/postbacks"},
        ),
        ("PUT", f"/v1/admin/publisher-apps/{PUBLISHER}", {"AdNetworkIdentifiers": [NETWORK]}),
        ("PUT", f"/v1/admin/advertised-apps/{APP}", {}),
        ("PUT", f"/v1/admin/advertised-apps/{FUZZ_APP}", {}),
    ]:
        status, _, data = http(method, path, body, admin)
        if status != 200:
            raise SystemExit(f"{method} {path}: {status} {data[:300]!r}")
    APP_KEY = json.loads(http("POST", f"/v1/admin/advertised-apps/{APP}/keys", None, admin)[2])["app-key"]
    # The fuzzer gets its own app's key: what it sends with it is authenticated, and told apart.
    FUZZ_APP_KEY = json.loads(http("POST", f"/v1/admin/advertised-apps/{FUZZ_APP}/keys", None, admin)[2])["app-key"]

    ingest_pid = children["ingest"].pid
    rss_before = rss_mib(ingest_pid)
    monitor = MemoryMonitor(ingest_pid)
    monitor.start()
    flood = forged_network_flood(redis)
    traffic = ValidTraffic(args.rate)
    traffic.start()
    log(f"valid traffic at {args.rate}/s; ingest RSS {rss_before:.1f} MiB")

    phases = {}
    supervisor = Supervisor()
    supervisor.start()

    def phase(name, function):
        """Runs one category; an exception (say, a service that died under it) is a violation, and
        the run goes on so that every category is still tried."""
        t = time.time()
        current_phase[0] = name
        log(f"{name} ...")
        try:
            result = function()
        except Exception as error:
            result = {"error": repr(error)}
            violations.append(f"phase {name} could not complete: {error!r}")
        phases[name] = {"seconds": round(time.time() - t, 1)}
        if result is not None:
            phases[name]["result"] = result
        log(f"{name}: {stats['inputs'].get(name, 0)} inputs, {phases[name]['seconds']} s")

    fuzz_results = []

    def fuzz_phase(label, auth):
        def run():
            for listener in ("public", "admin"):
                fuzz_results.append(fuzz(label, auth, listener))
                result = fuzz_results[-1]
                log(
                    f"schemathesis {label} ({listener} listener): {result['requests']} requests, {len(result['failures'])} distinct failures"
                )

        return run

    def slow_and_idle():
        # Slow and idle connections together, while valid traffic flows.
        slow_result = {}
        slow_thread = threading.Thread(target=lambda: slow_result.update(slow_requests()))
        slow_thread.start()
        idle = idle_connections()
        slow_thread.join()
        return {
            "idle": idle,
            "slow": {k: [None if c is None else round(c, 1) for c in v] for k, v in slow_result.items()},
        }

    if not args.skip_fuzz:
        phase("fuzz-anonymous", fuzz_phase("anonymous", False))
    phase("oversized", oversized_bodies)
    phase("headers", header_floods)
    phase("malformed", malformed_http)
    phase("auth", admin_auth)
    phase("postback-url", postback_urls)
    phase("forged-impressions", forged_impressions)
    phase("replay", replays)
    phase("slow+idle", slow_and_idle)
    if not args.skip_fuzz:
        phase("fuzz-authenticated", fuzz_phase("authenticated", True))
    # Last: the inputs most likely to take a stage down.
    phase("extreme-values", extreme_values)

    # Let valid traffic run a little longer after the abuse: it must still flow.
    time.sleep(3)
    traffic.stop.set()
    traffic.join()
    log(f"valid traffic stopped: {dict(traffic.sent)} sent; waiting for the verifier to drain `events`")
    current_phase[0] = "drain"
    # A stage restarted after a crash claims what its predecessor left pending after CLAIM_IDLE_MS.
    deadline = time.time() + 120
    while time.time() < deadline and not redis.group_done("events", "verifier"):
        time.sleep(0.2)
    time.sleep(1)
    supervisor.stop.set()
    supervisor.join()

    # ---- Invariants --------------------------------------------------------------------------------
    verified_entries = redis.stream("verified")
    rejected_entries = redis.stream("rejected")
    verified = {e["id"]: e for e in verified_entries}
    rejected = {
        e["body"].get("event-identifier"): e["body"] for e in rejected_entries if e.get("type") == "event.rejected"
    }

    # Services alive and healthy.
    health = {}
    for name in SERVICES:
        alive = children[name].poll() is None
        ok = False
        try:
            ok = alive and http("GET", "/health", timeout=5, port=ports[name])[0] == 200
        except OSError:
            pass
        health[name] = {
            "alive": alive,
            "health": ok,
            "exit_code": children[name].poll(),
            "crashes": sum(1 for c in crashes if c["service"] == name),
            "rss_mib": round(rss_mib(children[name].pid), 1),
        }
        if not ok:
            violations.append(
                f"{name} is {'not answering /health' if alive else 'dead (exit ' + str(children[name].poll()) + ')'} at the end"
            )
    for c in crashes:
        violations.append(
            f"{c['service']} crashed (exit {c['exit_code']}) during {c['phase']}: {c['site']} (log {c['log']})"
        )
    # What the stages dead-lettered: any event id in there explains a missing verdict.
    dead_letters = {}
    for stream in ("verifier:dead", "attribution-winner:dead", "scheduler:dead", "dispatcher:dead"):
        for _entry_id, fields in redis.entries(stream):
            text = b" ".join(fields).decode("utf-8", "replace")
            for event in re.findall(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", text):
                dead_letters.setdefault(event, stream)

    # Valid traffic: every request acknowledged, every acknowledged event verified.
    missing = [i for i in traffic.ids if i not in verified]
    refused_valid = {i: rejected[i].get("reason") for i in missing if i in rejected}
    refused_valid.update({i: "dead-lettered in " + dead_letters[i] for i in missing if i in dead_letters})
    valid = {
        "sent": dict(traffic.sent),
        "accepted": dict(traffic.accepted),
        "verified": len(traffic.ids) - len(missing),
        "failures": traffic.failures[:20],
        "refused_by_verifier": dict(collections.Counter(refused_valid.values())),
        "latency_ms": {"p50": traffic.latency_ms(0.5), "p99": traffic.latency_ms(0.99), "max": traffic.latency_ms(1.0)},
    }
    if traffic.failures:
        violations.append(
            f"{len(traffic.failures)} valid requests were not acknowledged with 202 (first: {traffic.failures[0]})"
        )
    if missing:
        violations.append(
            f"{len(missing)} acknowledged valid events did not reach `verified` ({len(refused_valid)} refused: "
            f"{dict(collections.Counter(refused_valid.values()))})"
        )

    # Hostile: what ingest accepted must be refused by the verifier, with the expected reason where known.
    hostile_accounting = collections.Counter()
    for event in stats["allowed_verified"]:
        stats["hostile_event_ids"].pop(event, None)
    for event, case in stats["hostile_event_ids"].items():
        if event in rejected:
            hostile_accounting[f"rejected: {rejected[event].get('reason')}"] += 1
        elif event in verified:
            entry = verified[event]
            # App-key-authenticated events of the fuzzer's own app are legitimately verified: the app
            # key is their authentication. Anything else verified is a hostile event that got through.
            item = (entry.get("body") or {}).get("advertised-item-identifier") or (
                (entry.get("body") or {}).get("conversion") or {}
            ).get("advertised-item-identifier")
            if (
                entry.get("type") in ("conversion.verified", "update.verified", "activity.verified")
                and item == FUZZ_APP
            ):
                hostile_accounting[f"verified: {entry['type']} authenticated by the fuzzer's app key"] += 1
            else:
                hostile_accounting["verified: VIOLATION"] += 1
                violations.append(f"hostile event {event} ({case}) reached `verified` as {entry.get('type')}")
        elif event in dead_letters:
            hostile_accounting[f"dead-lettered in {dead_letters[event]}"] += 1
            violations.append(
                f"hostile event {event} ({case}) was dead-lettered in {dead_letters[event]}, not refused with a reason"
            )
        else:
            hostile_accounting["no verdict"] += 1
            violations.append(f"hostile event {event} ({case}) accepted by ingest but neither verified nor rejected")
    wrong_reasons = []
    for event, (case, reason) in stats["expected_verdicts"].items():
        got = rejected.get(event, {}).get("reason")
        if got != reason:
            wrong_reasons.append({"case": case, "expected": reason, "got": got})
    if wrong_reasons:
        violations.append(
            f"{len(wrong_reasons)} hostile events refused with another reason than expected: {wrong_reasons[:5]}"
        )
    # Nothing in `verified` that nobody can account for (the fuzzer's 202s are all in its HAR).
    known = set(traffic.ids) | set(stats["hostile_event_ids"]) | set(stats["allowed_verified"])
    unaccounted = collections.Counter()
    for event, entry in verified.items():
        if event in known:
            continue
        body = entry.get("body") or {}
        item = body.get("advertised-item-identifier") or (body.get("conversion") or {}).get(
            "advertised-item-identifier"
        )
        if entry.get("type") in ("conversion.verified", "update.verified", "activity.verified") and item == FUZZ_APP:
            unaccounted[f"{entry['type']} of the fuzzer's app (app key)"] += 1
        else:
            unaccounted[f"{entry.get('type')} UNACCOUNTED"] += 1
            violations.append(f"`verified` holds {entry.get('type')} {event} that no valid request produced")
    dead = {
        s: redis.length(s) for s in ("verifier:dead", "attribution-winner:dead", "scheduler:dead", "dispatcher:dead")
    }
    for s, n in dead.items():
        if n:
            violations.append(f"{n} messages in {s}: a message broke a stage")

    # 5xx and problem JSON, from our clients, schemathesis and the services' own logs.
    if stats["five_xx"]:
        violations.append(f"{len(stats['five_xx'])} answers were 5xx (first: {stats['five_xx'][0]})")
    if stats["not_problem_json"]:
        violations.append(
            f"{len(stats['not_problem_json'])} 4xx answers were not problem JSON (first: {stats['not_problem_json'][0]})"
        )
    log_errors = {}
    for name in SERVICES:
        text = open(os.path.join(OUT, "logs", name + ".log"), errors="replace").read()
        errors = [
            line[:400]
            for line in text.splitlines()
            if re.search(r"\s(error|critical)\s", line) or "Fatal error" in line or "request failed" in line
        ]
        if errors:
            log_errors[name] = errors[:10]
    for failure in (f for r in fuzz_results for f in r["failures"] if f["hard"]):
        violations.append(f"schemathesis {failure['check']} on {failure['operation']}: {failure['title']}")
    for u in stats["unexpected"]:
        violations.append(
            f"{u['category']} / {u['case']}: expected {u['expected']}, got {u['got']} {u.get('reason') or ''}".strip()
        )

    rss_after = rss_mib(ingest_pid)
    monitor.stop.set()
    # "Blew up": more than 4x its starting size and 256 MiB more. A 16 MiB body refused at 64 KiB should
    # leave no trace at all.
    if rss_after > max(4 * rss_before, rss_before + 256):
        violations.append(f"ingest RSS grew from {rss_before:.0f} MiB to {rss_after:.0f} MiB")

    fuzz_requests = sum(r["requests"] for r in fuzz_results)
    report.update(
        {
            "seconds": round(time.time() - started, 1),
            "inputs_per_category": dict(stats["inputs"]),
            "inputs_total": sum(stats["inputs"].values()),
            "status_per_category": {k: dict(v) for k, v in stats["status"].items()},
            "four_xx_by_reason": dict(sorted(stats["reasons"].items())),
            "five_xx": len(stats["five_xx"]),
            "five_xx_answers": stats["five_xx"][:50],
            "not_problem_json": stats["not_problem_json"][:50],
            "crashes": len(crashes),
            "crash_list": crashes,
            "services": health,
            "schemathesis": [{k: v for k, v in r.items()} for r in fuzz_results],
            "schemathesis_requests": fuzz_requests,
            "phases": phases,
            "valid_traffic": valid,
            "hostile_accepted_by_ingest": len(stats["hostile_event_ids"]),
            "hostile_verdicts": dict(hostile_accounting),
            "verified_not_from_valid_traffic": dict(unaccounted),
            "streams": {
                "verified": len(verified_entries),
                "rejected": len(rejected_entries),
                "rejected_by_reason": dict(collections.Counter(r.get("reason") for r in rejected.values())),
                **{s: n for s, n in dead.items()},
            },
            "ingest_rss_mib": {
                "before": round(rss_before, 1),
                "peak": round(monitor.peak_rss, 1),
                "after": round(rss_after, 1),
            },
            "ingest_peak_fds": monitor.peak_fds,
            "service_log_errors": log_errors,
            "unexpected_answers": stats["unexpected"],
            "findings": stats["findings"],
            "forged_network_flood": flood,
            "violations": violations + violations_early,
        }
    )
    json.dump(report, open(os.path.join(OUT, "report.json"), "w"), indent=2, default=str)
    with open(os.path.join(OUT, "answers.jsonl"), "w") as f:
        for answer in stats["answers"]:
            f.write(json.dumps(answer) + "\n")
    markdown = render(report)
    open(os.path.join(OUT, "report.md"), "w").write(markdown)
    print(markdown)
    return 1 if violations or violations_early else 0


def service_state(name, health):
    state = "up" if health["health"] else "DOWN"
    return f"{name}: {state}" + (f" (restarted after {health['crashes']} crashes)" if health["crashes"] else "")


def render(r):
    lines = [
        f"# Hostile input run ({r['started']}, {r['seconds']} s)",
        "",
        "## Inputs tried",
        "",
        "| category | inputs | answers |",
        "|---|---|---|",
    ]
    for category, n in sorted(r["inputs_per_category"].items()):
        answers = ", ".join(f"{s}: {c}" for s, c in sorted(r["status_per_category"].get(category, {}).items()))
        lines.append(f"| {category} | {n} | {answers} |")
    lines += [f"| **total** | **{r['inputs_total']}** | |", ""]
    for f in r["schemathesis"]:
        lines.append(
            f"- schemathesis {f['label']}: {f['requests']} requests in {f['seconds']} s (exit {f['exit_code']}), "
            f"{len(f['failures'])} distinct check failures ({sum(1 for x in f['failures'] if x['hard'])} server errors)"
        )
    lines += [
        "",
        "## Invariants",
        "",
        f"- 5xx answers: **{r['five_xx']}**",
        f"- crashes: **{r['crashes']}** ({', '.join(service_state(n, h) for n, h in r['services'].items())})",
        f"- 4xx answers that are not problem JSON: **{len(r['not_problem_json'])}**",
        f"- valid traffic: sent {r['valid_traffic']['sent']}, accepted {r['valid_traffic']['accepted']}, "
        f"verified {r['valid_traffic']['verified']}; latency p50 {r['valid_traffic']['latency_ms']['p50']} ms, "
        f"p99 {r['valid_traffic']['latency_ms']['p99']} ms, max {r['valid_traffic']['latency_ms']['max']} ms",
        f"- hostile events ingest accepted: {r['hostile_accepted_by_ingest']}; verdicts {r['hostile_verdicts']}",
        f"- `verified` entries not from valid traffic: {r['verified_not_from_valid_traffic'] or 'none'}",
        f"- streams: {r['streams']}",
        f"- forged-network flood (before valid traffic): {r['forged_network_flood']['requests']} anonymous impressions, "
        f"half naming unregistered networks, half the registered one with a stranger's key: "
        f"**{r['forged_network_flood']['bytes_per_request']} Redis bytes per request** (target ≤ 600), "
        f"{r['forged_network_flood']['new_key_count']} new keys, "
        f"**{r['forged_network_flood']['keys_naming_an_unregistered_id']} naming an unregistered id**",
        f"- ingest RSS: {r['ingest_rss_mib']['before']} MiB before, {r['ingest_rss_mib']['peak']} MiB peak, "
        f"{r['ingest_rss_mib']['after']} MiB after; peak open descriptors {r['ingest_peak_fds']}",
        "",
        "## 4xx by reason",
        "",
    ]
    lines += [f"- {k}: {v}" for k, v in r["four_xx_by_reason"].items()]
    if r["schemathesis"]:
        lines += ["", "## schemathesis failures (distinct)", ""]
        for f in r["schemathesis"]:
            for x in f["failures"]:
                lines.append(
                    f"- [{f['label']}] {'**SERVER ERROR** ' if x['hard'] else ''}{x['check']} ({x['code']}) on {x['operation']}"
                    f" ×{x['occurrences']}: {x['title']}{' — ' + x['message'].splitlines()[0][:200] if x['message'] else ''}"
                )
                lines.append(
                    f"  - e.g. `{x['request']}` {('body `' + x['request_body'][:200] + '`') if x['request_body'] else ''} → "
                    f"`{(x['response'] or '')[:200]}`"
                )
    lines += ["", "## Findings (not violations)", ""]
    seen = set()
    for f in r["findings"]:
        key = (f.get("kind"), f.get("case"))
        if key in seen:
            continue
        seen.add(key)
        lines.append(f"- {f.get('kind')}: {f.get('case')} — {f.get('detail') or f.get('defect') or f.get('got')}")
    lines += ["", "## Violations", ""]
    lines += [f"- {v}" for v in r["violations"]] or ["none"]
    lines += ["", "PASSED" if not r["violations"] else f"FAILED: {len(r['violations'])} violations"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    configure()
    try:
        code = main()
    finally:
        stop_all()
    sys.exit(code)
