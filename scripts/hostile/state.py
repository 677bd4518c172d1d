"""The run's state, passed to whatever needs it: where the services listen and what the run registered
(`Target`), the command line, the run directory, the processes and what the run saw so far (`Run`)."""

from dataclasses import dataclass, field

from hostile import http_client
from hostile.observations import Observations

# The campaign valid traffic runs against, and the fuzzer's own advertised app: ids far from the small
# numbers fuzzers like.
NETWORK, APP, PUBLISHER, FUZZ_APP = "valid.hostile-run", 7_345_001, 7_345_002, 7_345_003


@dataclass(frozen=True)
class Target:
    """What every attack aims at: the services' ports, the credentials and the campaign."""

    ingest_port: int
    admin_port: int
    redis_port: int
    receiver_port: int
    admin_token: str
    network_key: object  # the registered network's private key (cryptography's EC key)
    app_key: str  # the advertised app's key: valid traffic's conversions
    fuzz_app_key: str  # the fuzzer's own app's key: what it sends with it is authenticated, and told apart
    network: str = NETWORK
    app: int = APP
    publisher: int = PUBLISHER
    fuzz_app: int = FUZZ_APP


@dataclass
class Run:
    """One hostile-input run: `options` (the command line), `out` (the run directory), `target`,
    `processes` (harness.Processes: the services by name), `ports` (every service's HTTP port, for its
    /health), `seen` (every answer) and `phase` (what runs now, for the crash supervisor's report)."""

    options: object
    out: str
    target: Target
    processes: object
    ports: dict
    seen: Observations = field(default_factory=Observations)
    phase: str = "setup"

    def http(self, method, path, body=None, headers=None, timeout=30, port=None):
        return http_client.http(self.target, method, path, body, headers, timeout, port)

    def raw(self, chunks, delay=0.0, wait=5.0, port=None):
        return http_client.raw(self.target, chunks, delay, wait, port)

    def request_bytes(self, method, path, body=b"", headers=None, content_length=True):
        return http_client.request_bytes(self.target, method, path, body, headers, content_length)

    def call(self, category, case, method, path, body=None, headers=None, expect=None, protocol_level=False):
        """One request, its answer recorded under `category`: (status, body)."""
        status, reply_headers, data = self.http(method, path, body, headers)
        self.seen.observe(category, case, status, reply_headers, data, expect, protocol_level)
        return status, data

    def pid(self, name):
        """The process id of service `name` now (a restarted one has a new one)."""
        return self.processes.running[name].pid
