"""What the Python run scripts share (scripts/bench.py, scripts/faults.py, scripts/hostile.py): free ports, waiting for
HTTP, JSON requests, redis-cli, and the processes a run starts (each can be killed and restarted with
the same command line, environment and log)."""

import json, os, signal, socket, subprocess, time, urllib.request


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_http(url, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except Exception:
            time.sleep(0.1)
    raise SystemExit(f"timed out waiting for {url}")


def http(method, url, body=None, token=None, timeout=10):
    request = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode())
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(request, timeout=timeout) as reply:
        return json.loads(reply.read() or b"{}")


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


PARTITIONS = 16  # the services' default PARTITIONS


def partitioned(base, count=PARTITIONS):
    """Every partition's name of a stream or key: `<base>:{pNN}` (docs/architecture.md, Redis keys)."""
    width = len(str(count - 1))
    return [f"{base}:{{p{i:0{width}d}}}" for i in range(count)]


def redis_cli(port, *args):
    return subprocess.run(["redis-cli", "-p", str(port), *map(str, args)], capture_output=True, text=True).stdout.strip()


def wait_redis(port, seconds=10):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if redis_cli(port, "ping") == "PONG":
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
