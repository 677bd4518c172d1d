"""What the Python run scripts share (scripts/bench.py, scripts/faults.py, scripts/demo.py,
scripts/hostile/): free ports, waiting for HTTP, JSON requests, redis-cli, the processes a run
starts (each can be killed and restarted with the same command line, environment and log), and its
Redis or Redis Cluster, which the project's one launcher starts and drives (`attribution-bench
redis`, the code the Swift suites start Redis with)."""

import base64
import json
import os
import random
import re
import signal
import socket
import subprocess
import time
import urllib.request

import redis

_next_port = [None]


def b64url_decode(text):
    """Unpadded base64url (a JWS segment), as str or bytes, decoded."""
    padding = "=" * (-len(text) % 4)
    return base64.urlsafe_b64decode(text + (padding.encode() if isinstance(text, bytes) else padding))


def b64url(data):
    """Unpadded base64url of bytes (a JWS segment), as str."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def sign_jws(key, header, payload):
    """A compact JWS of `payload` under `header`, signed ES256 with `key` (a `cryptography` EC private
    key): what a client of the pipeline signs with its own code (an ad network's impressions; the
    benchmark's peers' ready-signed postbacks). The signature is r and s, 32 bytes each (RFC 7518)."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

    signing_input = (
        b64url(json.dumps(header, separators=(",", ":")).encode()) + "." + b64url(json.dumps(payload).encode())
    )
    r, s = decode_dss_signature(key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
    return signing_input + "." + b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big"))


def free_port():
    """A port free a moment ago, below the kernel's ephemeral range (32768–60999), where outgoing
    connections take their local ports and could take it before the server binds it; in turn from a
    random start, so that no two picks of one run coincide. A cluster node's bus port (port + 10000)
    stays below the range too."""
    if _next_port[0] is None:
        _next_port[0] = random.randint(15000, 22767)
    for _ in range(512):
        port = _next_port[0]
        _next_port[0] = 15000 if port >= 22767 else port + 1
        if port_is_free(port):
            return port
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def until(predicate, seconds=600, every=0.05):
    """Polls `predicate` until it holds or `seconds` pass; whether it held."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return False


def port_is_free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def wait_http(url, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except Exception:
            time.sleep(0.1)
    raise SystemExit(f"timed out waiting for {url}")


# A day lasting a second: the three windows, their delays and every crowd past its thresholds in a
# benchmark's minutes (the settle time and window grace scaled down with it).
SCALED_DAY = {
    "TIME_SCALE": "86400",
    "CONVERSION_SETTLE_MS": "250",
    "WINDOW_CLOSE_GRACE_MS": "400",
    "CROWD_TIER_THRESHOLDS": "1,1,1",
}


class Pipeline:
    """The pipeline of one run, started the one way every run starts it (the benchmarks, the fault runs,
    the demo): the services on `redis_url` with the run's keys (`attribution keygen` into `keys`),
    ingest with the admin service, stage workers, the dispatcher with the run's signing keys, the
    reference receiver, and the usual campaign (one ad network, a publisher app listing it, an
    advertised app). `env`: added to every service's environment (`common`; a value None leaves the
    setting to the service's default). `placement`: a function of a service's name giving what runs
    it where it runs, (argv prefix, env): a test host's `ip netns exec` and address (HTTP_HOST, which
    its URLs use too), its own Redis user; by default none."""

    NETWORK = "bench.adattributionkit"
    PUBLISHER = 5838492
    APP = 1108187390

    def __init__(self, processes, bin_dir, redis_url, keys, token, placement=None, **env):
        self.processes, self.bin_dir, self.keys, self.token = processes, bin_dir, keys, token
        self.placement = placement or (lambda name: ((), {}))
        keygen(bin_dir, keys)
        self.common = {
            "REDIS_URL": redis_url,
            "LOG_LEVEL": "warning",
            "HTTP_HOST": "127.0.0.1",
            "POSTBACK_URL_ALLOWLIST": "127.0.0.1",
            "STREAM_RETENTION_HOURS": "0",
            **env,
        }
        self.ingest = self.admin = self.operations = None

    @property
    def public_key(self):
        """The ad network's public key (PEM) its impressions are signed for."""
        with open(os.path.join(self.keys, "network.public.pem")) as f:
            return f.read()

    @property
    def signing(self):
        """The dispatcher's signing keys."""
        return {
            "SIGNING_KEY_FILE": os.path.join(self.keys, "pipeline.private.pem"),
            "DEVELOPMENT_SIGNING_KEY_FILE": os.path.join(self.keys, "pipeline-development.private.pem"),
            "TEST_SIGNING_KEY_FILE": os.path.join(self.keys, "pipeline-test.private.pem"),
        }

    def start_http(self, ingest_port=None, admin_port=None, ingest_env=None):
        """ingest (on `ingest_port`, its operations listener on a free port of its host: `operations`) and
        the admin service, once both answer; sets and returns (ingest URL, admin URL). Again after ingest
        was stopped: ingest only. ingest serves no admin route: every run that registers starts admin."""
        ingest_port, operations_port = ingest_port or free_port(), free_port()
        own = {"HTTP_PORT": str(ingest_port), "OPERATIONS_HTTP_PORT": str(operations_port)}
        self.start("ingest", {"OPERATIONS_HTTP_HOST": self.host("ingest"), **(ingest_env or {}), **own})
        self.ingest = f"http://{self.host('ingest')}:{ingest_port}"
        self.operations = f"http://{self.host('ingest')}:{operations_port}"
        if self.admin is None:
            admin_port = admin_port or free_port()
            self.start("admin", {"HTTP_PORT": str(admin_port), "ADMIN_TOKEN": self.token})
            self.admin = f"http://{self.host('admin')}:{admin_port}"
            wait_http(self.admin + "/health")
        wait_http(self.ingest + "/health")
        return self.ingest, self.admin

    def start(self, name, env=None, prefix=(), process=None):
        """Service `name` (a stage, or the dispatcher with its signing keys) with `env` on top of `common`
        and its placement, its command line after its placement's prefix and `prefix` (a scheduling
        wrapper), as process `process` (default: `name`)."""
        placed_prefix, placed_env = self.placement(name)
        own = {**(self.signing if name == "dispatcher" else {}), **placed_env, **(env or {})}
        argv = [*placed_prefix, *prefix, f"{self.bin_dir}/{name}"]
        merged = {**self.common, "HTTP_PORT": str(free_port()), **own}
        return self.processes.start(process or name, argv, {k: v for k, v in merged.items() if v is not None})

    def host(self, name):
        """The address service `name` listens on (its placement's HTTP_HOST, else the common one)."""
        return self.placement(name)[1].get("HTTP_HOST") or self.common["HTTP_HOST"]

    def wait_signing_keys(self, seconds=30):
        """Until ingest's JWKS lists the dispatcher's keys (published once the dispatcher has started), so
        that a receiver started next finds the keys postbacks are signed with."""
        until(lambda: '"kid"' in json.dumps(http("GET", self.ingest + "/.well-known/jwks.json")), seconds, 0.1)

    def start_receiver(self, port, output, *options, name="receiver"):
        """The reference receiver on `port`, recording to `output`, verifying against ingest's JWKS."""
        jwks = f"{self.ingest}/.well-known/jwks.json"
        argv = [f"{self.bin_dir}/attribution", "receiver", "--port", str(port), "--jwks-url", jwks]
        process = self.processes.start(name, [*argv, "--output", output, *options, "--log-level", "warning"])
        wait_http(f"http://127.0.0.1:{port}/health")
        return process

    def register(self, receiver_port, network=NETWORK):
        """The campaign through the admin API: `network` posting to the receiver on `receiver_port`, the
        publisher app listing it, the advertised app."""
        self.register_network(network, f"http://127.0.0.1:{receiver_port}")
        http(
            "PUT",
            f"{self.admin}/v1/admin/publisher-apps/{self.PUBLISHER}",
            {"AdNetworkIdentifiers": [network]},
            self.token,
        )
        http("PUT", f"{self.admin}/v1/admin/advertised-apps/{self.APP}", {}, self.token)

    def register_network(self, network, receiver):
        """Ad network `network` with the run's network key, posting to the receiver at URL `receiver`."""
        body = {"public-key": self.public_key, "postback-url": f"{receiver}/postbacks"}
        http("PUT", f"{self.admin}/v1/admin/ad-networks/{network}", body, self.token)

    def app_key(self):
        """A new key of the advertised app, for conversions and updates."""
        return http("POST", f"{self.admin}/v1/admin/advertised-apps/{self.APP}/keys", {}, self.token)["app-key"]

    def offer(self, rate, seconds, app_key, *options, network=NETWORK):
        """`attribution-bench load`: a campaign (impression, install, value update per device) offered to ingest
        at `rate` events/s for `seconds`; its summary (offered, accepted, shed, ...)."""
        argv = [f"{self.bin_dir}/attribution-bench", "load", "--ingest-url", self.ingest, "--rate", str(rate)]
        argv += ["--duration", str(seconds), "--network", network, *options, "--app-key", app_key]
        argv += ["--key-file", os.path.join(self.keys, "network.private.pem")]
        output = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
        return json.loads(output.strip().splitlines()[-1])


def http(method, url, body=None, token=None, timeout=10):
    request = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode())
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(request, timeout=timeout) as reply:
        return json.loads(reply.read() or b"{}")


def keygen(bin_dir, keys, names=("network", "pipeline", "pipeline-development", "pipeline-test")):
    """`attribution keygen` for each name into `keys` (name.private.pem, name.public.pem)."""
    for name in names:
        subprocess.run(
            [os.path.join(bin_dir, "attribution"), "keygen", "--name", name, "--out", keys],
            check=True,
            capture_output=True,
        )


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def redis_info_cpu_seconds(info, children=False):
    """User plus system CPU seconds from `INFO cpu`'s text: Redis's own, or (`children`) those of its
    finished children (append-only file rewrites)."""
    suffix = "_children" if children else ""
    return sum(float(re.search(rf"used_cpu_{kind}{suffix}:([\d.]+)", info).group(1)) for kind in ("user", "sys"))


def rss_mib(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


PARTITIONS = int(os.environ.get("PARTITIONS", "16"))  # the services' PARTITIONS (default 16)


_bin_dir = [None]
_catalogs = {}


def use_binaries(bin_dir):
    """Where the project's executables are: `catalog` runs its `attribution` (every run script calls
    this with its BIN argument before it names a partitioned stream)."""
    _bin_dir[0] = bin_dir


def catalog(count=PARTITIONS):
    """`attribution catalog --json` for `count` partitions (cached): the Redis names, partition hash
    tags and compact-coding key table, as the services build them, so no rule is written again here."""
    if count not in _catalogs:
        if _bin_dir[0] is None:
            raise RuntimeError("harness.use_binaries(bin_dir) must name the project's executables first")
        command = [os.path.join(_bin_dir[0], "attribution"), "catalog", "--json", "--partitions", str(count)]
        _catalogs[count] = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
    return _catalogs[count]


def stream_lines(redis_url, stream, *options):
    """`attribution stream`: every entry of a stream's partitions in entry order, each a dict with its
    `stream` key, `entry` id and `message` (the JSON envelope, whatever form it is stored in), or
    `undecodable`, and a dead letter's other `fields`. `options`: its range, tail or login options."""
    if _bin_dir[0] is None:
        raise RuntimeError("harness.use_binaries(bin_dir) must name the project's executables first")
    command = [os.path.join(_bin_dir[0], "attribution"), "stream", stream, "--redis-url", redis_url, *options]
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in output.splitlines()]


def partition_tag(index, count=PARTITIONS):
    """Partition `index`'s hash tag (`{p07}` or `{p07.12}`), as the services make it."""
    return catalog(count)["partitions"]["tags"][index]


def partitioned(base, count=PARTITIONS):
    """Every partition's name of a stream or key: `<base>:<tag>` (docs/reference/redis-keys.md)."""
    return [f"{base}:{partition_tag(i, count)}" for i in range(count)]


class RedisConnection:
    """One Redis through the `redis` package, for polling many figures at once without a redis-cli
    process per command (the benchmark samples stream lag several times a second). Replies are as Redis
    sends them, without the package's parsing per command (the callers read `XINFO` and `INFO` as
    Redis words them); with `binary`, bulk replies are bytes, not text: stored states, plans and held
    postbacks are compact binary, not UTF-8. `timeout`: seconds of silence before a reply is given up (None: wait)."""

    def __init__(self, port, binary=False, timeout=None):
        tls = (
            {
                "ssl": True,
                "ssl_ca_certs": _tls["ca-file"],
                "ssl_certfile": _tls.get("cert-file"),
                "ssl_keyfile": _tls.get("key-file"),
            }
            if _tls
            else {}
        )
        self.client = redis.Redis(
            host="127.0.0.1",
            port=port,
            protocol=2,
            decode_responses=not binary,
            encoding_errors="replace",
            socket_timeout=timeout,
            **tls,
        )
        self.client.response_callbacks.clear()

    def pipeline(self, commands):
        """Sends every command, then reads every reply; an error reply is returned as a RedisError."""
        batch = self.client.pipeline(transaction=False)
        for command in commands:
            batch.execute_command(*command)
        replies = batch.execute(raise_on_error=False)
        return [RedisError(str(reply)) if isinstance(reply, redis.ResponseError) else reply for reply in replies]

    def close(self):
        self.client.close()


class RedisError(str):
    """An error reply (`-ERR …`), kept as a value so one failed command does not hide the others."""


def group_backlog(connection, pairs, count=PARTITIONS):
    """How far each (stream, group) is behind, summed over the stream's partitions: entries not yet
    delivered to the group (XINFO GROUPS lag) plus entries delivered and not acknowledged (pending). A
    partition whose stream does not exist yet counts 0; a lag Redis cannot tell (nil) counts as
    entries-added minus entries-read of the stream. Returns {(stream, group): backlog}."""
    names = [(pair, name) for pair in pairs for name in partitioned(pair[0], count)]
    replies = connection.pipeline([("XINFO", "GROUPS", name) for _, name in names])
    missing = [
        name
        for (_, name), reply in zip(names, replies, strict=False)
        if isinstance(reply, list) and any(dict(zip(g[::2], g[1::2], strict=False)).get("lag") is None for g in reply)
    ]
    added = dict(zip(missing, stream_entries_added(connection, missing), strict=False)) if missing else {}
    backlog = {pair: 0 for pair in pairs}
    for (pair, name), reply in zip(names, replies, strict=False):
        if not isinstance(reply, list):
            continue
        for fields in reply:
            group = dict(zip(fields[::2], fields[1::2], strict=False))
            if group.get("name") != pair[1]:
                continue
            lag = group.get("lag")
            if lag is None:
                lag = max(0, added.get(name, 0) - (group.get("entries-read") or 0))
            backlog[pair] += lag + (group.get("pending") or 0)
    return backlog


def group_entry(reply, group):
    """`group`'s entry in one XINFO GROUPS reply, as a dict of str keys: the reply as a RESP client gives
    it (a list of flat field lists, names as str or bytes) or as `redis-cli --json` prints it (a list of
    objects); None when the stream or the group does not exist."""
    if not isinstance(reply, list):
        return None
    for fields in reply:
        entry = fields if isinstance(fields, dict) else dict(zip(fields[::2], fields[1::2], strict=False))
        entry = {_text(key): _text(value) for key, value in entry.items()}
        if entry.get("name") == group:
            return entry
    return None


def _text(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def caught_up(entry):
    """Whether a group's XINFO GROUPS entry (`group_entry`) shows all of its stream read and acknowledged."""
    return entry is not None and entry.get("lag") == 0 and entry.get("pending") == 0


def group_done(connection, stream, group, count=PARTITIONS):
    """Whether `group` exists on every partition of `stream` and has read and acknowledged all of it
    (one pipelined round trip; `group_backlog` counts a partition without the group as done)."""
    replies = connection.pipeline([("XINFO", "GROUPS", name) for name in partitioned(stream, count)])
    return all(caught_up(group_entry(reply, group)) for reply in replies)


def stream_entries_added(connection, names):
    """XINFO STREAM's entries-added (every entry ever added, trimmed ones included) per stream name; 0
    for a stream that does not exist."""
    replies = connection.pipeline([("XINFO", "STREAM", name) for name in names])
    return [
        dict(zip(r[::2], r[1::2], strict=False)).get("entries-added", 0) if isinstance(r, list) else 0 for r in replies
    ]


def entries_added(connection, stream, count=PARTITIONS):
    """Entries ever added to a partitioned stream, summed over its partitions."""
    return sum(stream_entries_added(connection, partitioned(stream, count)))


def slot_ranges(parts):
    """(low, high) of each slot range in the slot fields of a CLUSTER NODES line ("0-5460", "7"),
    leaving out migrations in progress ("[5461->-id]")."""
    for part in parts:
        if not part.startswith("["):
            low, _, high = part.partition("-")
            yield int(low), int(high or low)


def start_redis(processes, port, directory, aof=True, host=None, prefix=(), options=(), tls=False):
    """A private redis-server on `port` with its files in `directory` (`attribution-bench redis`, the
    launcher the Swift suites use): no snapshots; with `aof`, an append-only file synced every second
    (what compose runs), else nothing on disk. `host`: the one address it listens on; `prefix`: what
    runs it (a test host's `ip netns exec`); `options`: more of its command line (an ACL file); `tls`:
    TLS only, demanding client certificates, with a CA and certificates made in DIRECTORY/tls, which
    the run then uses (`use_tls`)."""
    argv = ["--port", str(port), "--host", host or "127.0.0.1", "--directory", directory]
    argv += ["--append-only"] if aof else []
    argv += ["--tls"] if tls else []
    argv += [f"--prefix={word}" for word in prefix] + [f"--server-argument={word}" for word in options]
    return LaunchedRedis(processes, "redis", argv)


_login = {}


def redis_login(user, password_file):
    """Every redis-cli from now on (`redis_cli`) and every launched Redis's own connections log in as
    `user` with the password in `password_file`: Redis with ACLs on has its default user off. The
    password goes in redis-cli's environment, not on its command line."""
    with open(password_file) as file:
        _login.update(user=user, password=file.read().strip(), password_file=password_file)


_tls = {}  # the launched Redis's TLS files ("ca-file", "cert-file", "key-file"), when it is TLS only


def use_tls(files):
    """From now on every process this run starts (services and `attribution`, through REDIS_TLS_*),
    every redis-cli and every `RedisConnection` reach Redis over TLS with these files (the launcher's
    ready line's "tls": its CA and the client certificate it demands)."""
    _tls.update(files)
    for name, setting in (("ca-file", "CA_FILE"), ("cert-file", "CERT_FILE"), ("key-file", "KEY_FILE")):
        if files.get(name):
            os.environ["REDIS_TLS_" + setting] = files[name]


def use_plaintext():
    """Undoes `use_tls`: the next Redis of the run is plaintext (a benchmark measuring both)."""
    _tls.clear()
    for setting in ("CA_FILE", "CERT_FILE", "KEY_FILE"):
        os.environ.pop("REDIS_TLS_" + setting, None)


def tls_cli_arguments():
    """redis-cli's TLS options for the launched Redis, none in plaintext."""
    if not _tls:
        return []
    arguments = ["--tls", "--cacert", _tls["ca-file"]]
    return arguments + (["--cert", _tls["cert-file"], "--key", _tls["key-file"]] if _tls.get("cert-file") else [])


def run_redis_cli(args, **options):
    """`redis-cli ARGS` (as the login, if any; over TLS when the run's Redis is), run to its end with
    subprocess.run's `options`."""
    args = [*tls_cli_arguments(), *map(str, args)]
    if not _login:
        return subprocess.run(["redis-cli", *args], **options)
    env = {**os.environ, "REDISCLI_AUTH": _login["password"]}
    return subprocess.run(["redis-cli", "--user", _login["user"], "--no-auth-warning", *args], env=env, **options)


def redis_cli(port, *args, host="127.0.0.1"):
    return run_redis_cli(["-h", host, "-p", port, *args], capture_output=True, text=True).stdout.strip()


def wait_redis(port, seconds=10, host="127.0.0.1"):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if redis_cli(port, "ping", host=host) == "PONG":
            return
        time.sleep(0.05)
    raise SystemExit(f"redis-server on port {port} did not answer")


class Processes:
    """Named child processes, logging to OUT/<name>.log (appended across restarts)."""

    def __init__(self, out):
        self.out = out
        self.specs = {}
        self.running = {}

    def start(self, name, argv, env=None):
        self.specs[name] = (argv, {**os.environ, **(env or {})})
        return self.restart(name)

    def restart(self, name):
        argv, env = self.specs[name]
        log = open(os.path.join(self.out, name + ".log"), "a")
        self.running[name] = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
        return self.running[name]

    def kill(self, name, sig=signal.SIGKILL):
        process = self.running[name]
        process.send_signal(sig)
        process.wait(timeout=30)
        return process.returncode

    def dead(self):
        """Names of processes that exited on their own."""
        return [name for name, process in self.running.items() if process.poll() is not None]

    def stop_all(self):
        for process in self.running.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.running.values():
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()


class LaunchedRedis:
    """Redis for a run, started and driven by `attribution-bench redis` (the project's one launcher, which
    the Swift suites use too), as process `name` of `processes` (stopped with the others: SIGTERM stops
    every node it started). `request` sends it one request and returns the answer's fields."""

    def __init__(self, processes, name, argv):
        if _bin_dir[0] is None:
            raise RuntimeError("harness.use_binaries(bin_dir) must name the project's executables first")
        if _login:
            argv = [*argv, "--user", _login["user"], "--password-file", _login["password_file"]]
        command = [os.path.join(_bin_dir[0], "attribution-bench"), "redis", *argv]
        log_path = os.path.join(processes.out, name + ".log")
        with open(log_path, "a") as log:
            self.process = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, bufsize=1
            )
        processes.running[name] = self.process
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"attribution-bench redis did not start Redis; see {log_path}")
        ready = json.loads(line)
        self.url, self.ports, self.pid = ready["url"], ready["ports"], ready.get("pid")
        if "tls" in ready:
            use_tls(ready["tls"])
        self.addresses = {int(port): address for port, address in ready["addresses"].items()}

    def request(self, command, **fields):
        self.process.stdin.write(json.dumps({"command": command, **fields}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        answer = json.loads(line) if line else {"ok": False, "error": "attribution-bench redis exited"}
        if not answer.pop("ok"):
            raise SystemExit(f"Redis request {command} failed: {answer['error']}")
        return answer

    def kill(self):
        """SIGKILL of the one redis-server (its files stay)."""
        self.request("kill")

    def restart(self):
        """The same redis-server again, on its port and files (its append-only file); once it answers."""
        self.pid = self.request("restart")["pid"]


class RedisCluster(LaunchedRedis):
    """A local Redis Cluster (`attribution-bench redis --cluster`): `nodes` redis-server processes (AOF
    on, each in its own directory under OUT/cluster) made into a cluster of nodes/2 primaries with one
    replica each. Node timeout 1 s, so a killed primary's replica takes over within a few seconds.

    With `apart`, each node has a loopback address of its own (127.0.0.21, .22, …) and answers on
    127.0.0.1 too, so `cut`/`heal` can drop what passes between chosen nodes (iptables) while the
    services and the run's own observers still reach every node. `options`: more of every node's
    command line (ACLs: an ACL file, the replication user's login; with `redis_login` for redis-cli)."""

    def __init__(self, processes, out, nodes=6, apart=False, options=(), tls=False):
        argv = ["--cluster", "--nodes", str(nodes), "--append-only", "--directory", os.path.join(out, "cluster")]
        argv += ["--apart"] if apart else []
        argv += ["--tls"] if tls else []
        super().__init__(processes, "redis", [*argv, *(f"--server-argument={word}" for word in options)])

    def cut(self, port, others):
        """Drops everything between node `port` and each of `others` (both ways; clients still reach all)."""
        self.request("cut", port=port, others=list(others))

    def heal(self):
        """Removes every cut (stopping the launcher does too)."""
        self.request("heal")

    def nodes(self):
        """(port, role, node id, slots text) of every node that answers and is not failed."""
        rows = []
        for node in self.request("nodes")["nodes"]:
            slots = " ".join(f"{low}-{high}" if low != high else str(low) for low, high in node["slots"])
            rows.append((node["port"], "master" if node["role"] == "primary" else "replica", node["id"], slots))
        return rows

    def replica_of(self, port):
        """The port of a replica following primary `port`, or None."""
        nodes = self.request("nodes")["nodes"]
        own = next((node["id"] for node in nodes if node["port"] == port), None)
        return next((node["port"] for node in nodes if own and node["primary"] == own), None)

    def primaries(self):
        return [port for port, role, _, slots in self.nodes() if role == "master" and slots]

    def wait_ok(self):
        """Until every running node says cluster_state:ok and every replica's link is up."""
        self.request("wait-healthy")

    wait_replicas = wait_ok

    def kill_primary(self):
        """SIGKILL of a primary with a replica; returns its port once a replica serves its slots and every
        surviving node says cluster_state:ok."""
        return self.request("fail-over")["killed"]

    def replace(self, port):
        """A killed node back as a new, empty node on the same port that rejoins as a replica of the
        primary that replaced it (`RedisCluster.replace(port:)` says why not with its old state)."""
        self.request("replace", port=port)

    def reshard(self, slots, source, target):
        """Moves `slots` slots from primary `source` to primary `target` with `redis-cli --cluster
        reshard`, while traffic flows; once every node agrees on the slots."""
        self.request("reshard", slots=slots, source=source, target=target)
