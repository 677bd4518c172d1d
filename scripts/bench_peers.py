#!/usr/bin/env python3
"""Hold-and-fire against peer delayed-job queues, on the same Redis and the same receiver.

The work: N deliveries, all due at the same moment T0 (2 s ahead); when due, each is POSTed to the
reference receiver (which verifies the ES256 signature), failures retried. Figure: deliveries per
second from T0 until the receiver has accepted the last one. Ours: the scheduler's compact held queue
(`scheduler:held:w0`) released by the scheduler's timer loop and delivered by the dispatcher (which
signs each postback). Peers, installed from PyPI into a venv: RQ (enqueue_at, scheduler in the worker,
SimpleWorker so no fork per job: its fastest setting) and arq (_defer_until, 64 jobs in flight per
worker), two worker processes each, POSTing bodies pre-signed with the same key.

Called by scripts/bench.py with the running pipeline (Redis URL, receiver URL, binaries, keys)."""

import json
import os
import subprocess
import time
import urllib.request
import uuid

from harness import sign_jws

WORKER_SOURCE = r"""
import json, os, httpx
RECEIVER = os.environ["PEER_RECEIVER"]
client = httpx.Client(timeout=10)

def fire(body):
    response = client.post(RECEIVER, content=body, headers={"Content-Type": "application/json"})
    if response.status_code // 100 != 2:
        raise RuntimeError(f"HTTP {response.status_code}")

async def arq_fire(ctx, body):
    response = await ctx["client"].post(RECEIVER, content=body, headers={"Content-Type": "application/json"})
    if response.status_code // 100 != 2:
        raise RuntimeError(f"HTTP {response.status_code}")

async def startup(ctx):
    ctx["client"] = httpx.AsyncClient(timeout=10)

class WorkerSettings:
    from arq.connections import RedisSettings
    functions = [arq_fire]
    on_startup = startup
    redis_settings = RedisSettings.from_dsn(os.environ["PEER_REDIS"])
    max_jobs = 64
    poll_delay = 0.05
    max_tries = 10
"""


def rq_enqueue_source(redis_url, t0):
    """The program the venv's Python runs to schedule the pickled bodies on its stdin with RQ, due at `t0`."""
    return f"""
import datetime, sys, pickle
from redis import Redis
from rq import Queue, Retry
import peerjobs
bodies = pickle.load(sys.stdin.buffer)
queue = Queue("bench", connection=Redis.from_url({redis_url!r}))
due = datetime.datetime.fromtimestamp({t0}, tz=datetime.timezone.utc)
for body in bodies:
    queue.enqueue_at(due, peerjobs.fire, body, retry=Retry(max=9, interval=[1, 5, 30]))
"""


def arq_enqueue_source(redis_url, t0):
    """The same with arq: each body deferred until `t0`."""
    return f"""
import asyncio, datetime, sys, pickle
from arq import create_pool
from arq.connections import RedisSettings
async def main():
    pool = await create_pool(RedisSettings.from_dsn({redis_url!r}))
    due = datetime.datetime.fromtimestamp({t0}, tz=datetime.timezone.utc)
    for body in pickle.load(sys.stdin.buffer):
        await pool.enqueue_job("arq_fire", body, _defer_until=due)
asyncio.run(main())
"""


def signed_bodies(count, key_pem, kid, network, app):
    """AdAttributionKit postback bodies signed ES256 with the pipeline's key (the receiver verifies them)."""
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(key_pem.encode(), password=None)
    bodies = []
    for _ in range(count):
        payload = {
            "impression-type": "app-impression",
            "ad-network-identifier": network,
            "source-identifier": "39",
            "advertised-item-identifier": app,
            "conversion-type": "download",
            "marketplace-identifier": "com.apple.AppStore",
            "postback-identifier": str(uuid.uuid4()),
            "postback-sequence-index": 0,
            "did-win": True,
        }
        jws = sign_jws(key, {"alg": "ES256", "kid": kid}, payload)
        bodies.append(
            json.dumps({"jws-string": jws, "ad-interaction-type": "click", "coarse-conversion-value": "high"}).encode()
        )
    return bodies


def accepted(receiver):
    return json.loads(urllib.request.urlopen(receiver + "/stats").read())["accepted"]


def wait_for(receiver, target, timeout=600):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if accepted(receiver) >= target:
            return time.time()
        time.sleep(0.02)
    raise SystemExit(f"timed out: {accepted(receiver)} of {target}")


def run_peers(venv, out, redis_url, receiver, key_pem, kid, network, app, count, results):
    """Fills `results` peer by peer, so one that fails leaves the others' figures."""
    python = os.path.join(venv, "bin", "python")
    workdir = os.path.join(out, "peers")
    os.makedirs(workdir, exist_ok=True)
    open(os.path.join(workdir, "peerjobs.py"), "w").write(WORKER_SOURCE)
    env = {**os.environ, "PEER_RECEIVER": receiver + "/postbacks", "PEER_REDIS": redis_url, "PYTHONPATH": workdir}

    # RQ: jobs scheduled with enqueue_at; the workers' scheduler moves them to the queue when due.
    bodies = signed_bodies(count, key_pem, kid, network, app)
    base = accepted(receiver)
    t0 = time.time() + 2
    enqueue = rq_enqueue_source(redis_url, t0)
    import pickle

    subprocess.run([python, "-c", enqueue], input=pickle.dumps(bodies), env=env, check=True)
    workers = [
        subprocess.Popen(
            [
                os.path.join(venv, "bin", "rq"),
                "worker",
                "--url",
                redis_url,
                "--with-scheduler",
                "--worker-class",
                "rq.worker.SimpleWorker",
                "--quiet",
                "bench",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(2)
    ]
    done = wait_for(receiver, base + count)
    for worker in workers:
        worker.terminate()
        worker.wait()
    results["rq"] = {"deliveries": count, "seconds_after_due": done - t0, "per_s": count / max(0.001, done - t0)}

    # arq: jobs deferred until T0, two worker processes.
    bodies = signed_bodies(count, key_pem, kid, network, app)
    base = accepted(receiver)
    t0 = time.time() + 2
    enqueue = arq_enqueue_source(redis_url, t0)
    subprocess.run([python, "-c", enqueue], input=pickle.dumps(bodies), env=env, check=True)
    workers = [
        subprocess.Popen(
            [os.path.join(venv, "bin", "arq"), "peerjobs.WorkerSettings"],
            env=env,
            cwd=workdir,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(2)
    ]
    done = wait_for(receiver, base + count)
    for worker in workers:
        worker.terminate()
        worker.wait()
    results["arq"] = {"deliveries": count, "seconds_after_due": done - t0, "per_s": count / max(0.001, done - t0)}
    return results
