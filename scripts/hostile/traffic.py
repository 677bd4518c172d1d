"""Impressions signed the way an ad network's own server would sign them (as IndependentSignerTests
does), and the valid traffic that flows through the whole run: one signed impression and one
conversion for its device per tick."""

import collections
import json
import threading
import time
import uuid

from harness import sign_jws
from hostile import http_client


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


def campaign_jws(target, app=None, source=1234):
    """An impression of the run's campaign (or for advertised app `app`), properly signed by its network."""
    payload = impression_payload(target.network, app or target.app, target.publisher, source=source)
    return sign_jws(target.network_key, {"alg": "ES256", "kid": target.network}, payload)


class ValidTraffic(threading.Thread):
    """Valid signed impressions and conversions at `rate` per second each, until `stop`: every one must
    be acknowledged and verified whatever the attacks do meanwhile."""

    def __init__(self, target, rate):
        super().__init__(daemon=True)
        self.target = target
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
            status, _, data = http_client.http(self.target, "POST", path, body, headers, timeout=20)
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
            self.post(
                "impression", "/v1/impressions", impression_body(campaign_jws(self.target, source=n % 9000), device)
            )
            self.post(
                "conversion",
                "/v1/conversions",
                {
                    "device-identifier": device,
                    "advertised-item-identifier": self.target.app,
                    "conversion-type": "download",
                    "time": now_ms(),
                },
                {"Authorization": "Bearer " + self.target.app_key},
            )
            n += 1
            self.stop.wait(max(0.0, self.interval - (time.time() - started)))

    def latency_ms(self, q):
        values = sorted(self.latencies)
        return round(values[min(len(values) - 1, int(q * len(values)))] * 1000, 1) if values else None
