"""Probes the network fault run (scripts/faults.py --network) keeps running from the host while faults
strike, so that its report can say what each fault made unavailable, for how long, and how slowly the
services answered meanwhile."""

import json
import threading
import time
import urllib.error
import urllib.request
import uuid


class ReadinessProbe:
    """Reads each service's /ready four times a second from the host, with the time each answer took,
    so the report can say what a fault made unavailable and for how long."""

    def __init__(self, urls, started):
        self.urls, self.samples, self.lock, self.started = urls, [], threading.Lock(), started
        for name, url in urls.items():
            threading.Thread(target=self.poll, args=(name, url), daemon=True).start()

    def poll(self, name, url):
        while True:
            begun = time.time()
            try:
                with urllib.request.urlopen(url, timeout=10) as answer:
                    ready = answer.status == 200
            except urllib.error.HTTPError:
                ready = False
            except OSError:
                ready = False
            took = time.time() - begun
            with self.lock:
                self.samples.append((begun - self.started, name, ready, took))
            time.sleep(max(0, 0.25 - took))

    def not_ready(self, name, begin, end):
        """Seconds within [begin, end] that `name`'s /ready was not answering 200 within a second: each reading stands
        for the time until the next one (a reading that waited out a timeout stands for that wait)."""
        with self.lock:
            # A reading that took over a second (a stalled process answers once resumed) counts as unavailable.
            mine = sorted((at, ready and took <= 1) for at, sample, ready, took in self.samples if sample == name)
        total = 0.0
        for (at, ready), (following, _) in zip(mine, mine[1:] + [(end, True)], strict=False):
            if not ready:
                total += max(0.0, min(following, end) - max(at, begin))
        return total

    def summary(self, faults_seen):
        """Per fault: how long the service(s) it hit were not ready, from its start to 5 s after its
        end (or the next fault's start), and the longest /ready answer meanwhile (a partitioned service waits out its Redis command
        timeout before it answers 503)."""
        rows = []
        ordered = sorted(faults_seen, key=lambda fault: fault[2])
        for index, (kind, target, begun, ended) in enumerate(ordered):
            # Until 5 s after its end, but not into the next fault.
            following = ordered[index + 1][2] if index + 1 < len(ordered) else float("inf")
            end = min((ended if ended is not None else begun) + 5, following)
            # A fault on one service's host hits that service; any other (loss, latency, Redis nodes) all of them.
            hit = [target] if target in self.urls else list(self.urls)
            with self.lock:
                slowest = max(
                    (took for at, name, _, took in self.samples if name in hit and begun <= at <= end), default=0
                )
            rows.append(
                {
                    "fault": kind,
                    "target": target,
                    "started-s": round(begun, 1),
                    "ended-s": round(ended, 1) if ended is not None else None,
                    "not-ready-s": {name: round(self.not_ready(name, begun, end), 1) for name in hit},
                    "slowest-ready-answer-s": round(slowest, 2),
                }
            )
        return rows


class EventProbe:
    """Posts a conversion-value update to ingest eight times a second, each from a thread of its own, so
    that requests keep arriving while earlier ones wait on Redis (as a real client's concurrent requests
    do): each for a device of its own with no conversion (the update waits for one, so it changes nothing
    a campaign does). Records each answer: status, reason, how long it took. Every update acknowledged
    with 202 is written to `acknowledgements` like the campaign's, so the ledger accounts for it too."""

    INTERVAL_S = 0.125
    MOST_OUTSTANDING = 64  # requests waiting at once; past that the pacer waits (a hang shows anyway)

    def __init__(self, ingest, app_key, item, acknowledgements, started):
        self.ingest, self.app_key, self.item, self.started = ingest, app_key, item, started
        self.samples, self.lock = [], threading.Lock()
        self.acknowledgements = open(acknowledgements, "a")
        self.stopping = threading.Event()
        self.outstanding = threading.BoundedSemaphore(self.MOST_OUTSTANDING)
        self.requests = []
        self.pacer = threading.Thread(target=self.pace, daemon=True)
        self.pacer.start()

    def stop(self):
        """Ends the posting once the faults are over: the ledger then reads an idle pipeline and an
        acknowledgement file that no longer grows."""
        self.stopping.set()
        self.pacer.join()
        for request in self.requests:
            request.join()
        self.acknowledgements.close()

    def pace(self):
        """Starts one request every INTERVAL_S, whether or not the earlier ones have been answered."""
        following = time.time()
        while not self.stopping.is_set():
            self.outstanding.acquire()
            request = threading.Thread(target=self.post, daemon=True)
            self.requests.append(request)
            request.start()
            following += self.INTERVAL_S
            self.stopping.wait(max(0, following - time.time()))

    def post(self):
        try:
            self.post_one()
        finally:
            self.outstanding.release()

    def post_one(self):
        device = f"probe-{uuid.uuid4()}"
        body = json.dumps(
            {
                "device-identifier": device,
                "advertised-item-identifier": int(self.item),
                "time": int(time.time() * 1000),
                "fineConversionValue": 1,
            }
        ).encode()
        request = urllib.request.Request(self.ingest + "/v1/conversion-value-updates", method="POST", data=body)
        request.add_header("Content-Type", "application/json")
        request.add_header("Authorization", "Bearer " + self.app_key)
        request.add_header("Idempotency-Key", device)
        begun = time.time()
        status, reason, answer = 0, "no answer", {}
        try:
            # Far past any timeout ingest documents: a hang shows as a long answer, not as a cut one.
            with urllib.request.urlopen(request, timeout=60) as reply:
                status, answer = reply.status, json.loads(reply.read() or b"{}")
                reason = ""
        except urllib.error.HTTPError as error:
            status = error.code
            try:
                reason = json.loads(error.read() or b"{}").get("reason", "")
            except ValueError:
                reason = "not problem JSON"
        except OSError as error:
            reason = f"connection: {error}"
        took = time.time() - begun
        with self.lock:
            self.samples.append((begun - self.started, status, reason, took))
            if status == 202:
                self.acknowledgements.write(
                    json.dumps(
                        {
                            "device": device,
                            "event-identifier": answer.get("event-identifier"),
                            "kind": "conversion-value-updates",
                        }
                    )
                    + "\n"
                )
                self.acknowledgements.flush()

    # How long into a fault ingest may take to notice it: a request that arrives earlier can go to Redis
    # and wait there; ingest refuses later ones once that write's round trip has gone on for 10 × its
    # queue target (200 ms by default), and a request is sent every INTERVAL_S.
    NOTICED_AFTER_S = 0.5

    def summary(self, begun, ended):
        """What the event route answered to requests under way between `begun` and 5 s after `ended` (one
        sent before the fault and answered during it counts): each status and reason with its count, the
        slowest answer, the slowest answer to a request sent once the fault had been noticed (from
        NOTICED_AFTER_S after `begun` to `ended`), and when (seconds after `ended`) the first 202 came back."""
        with self.lock:
            mine = [sample for sample in self.samples if sample[0] <= ended + 5 and sample[0] + sample[3] >= begun]
        noticed = [took for at, *_, took in mine if begun + self.NOTICED_AFTER_S <= at <= ended]
        answers = {}
        for _, status, reason, _ in mine:
            key = f"{status} {reason}".strip()
            answers[key] = answers.get(key, 0) + 1
        back = min(
            (at + took - ended for at, status, _, took in mine if status == 202 and at + took >= ended), default=None
        )
        return {
            "answers": answers,
            "slowest-answer-s": round(max((took for *_, took in mine), default=0), 2),
            "slowest-once-noticed-s": round(max(noticed, default=0), 2),
            "accepting-again-after-s": None if back is None else round(max(0.0, back), 1),
        }
