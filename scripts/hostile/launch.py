"""The pipeline the run attacks, started with the harness's launcher: a private Redis with its
append-only file on (what compose runs), the services, the reference receiver, and the campaign
valid traffic runs against (plus the fuzzer's own advertised app)."""

import os
import shutil
import uuid

from cryptography.hazmat.primitives import serialization

from harness import Pipeline, free_port, http, start_redis, wait_http
from hostile.state import APP, FUZZ_APP, NETWORK, PUBLISHER, Target

SERVICES = ["ingest", "admin", "verifier", "attribution-winner", "scheduler", "dispatcher"]


def copy_binaries(source, out):
    """Copies of the executables the run starts, in OUT/bin: whoever rebuilds `source` meanwhile does
    not change what runs here."""
    bin_dir = os.path.join(out, "bin")
    os.makedirs(bin_dir, exist_ok=True)
    for name in SERVICES + ["attribution"]:
        shutil.copy2(os.path.join(source, name), os.path.join(bin_dir, name))
    return bin_dir


def start(processes, bin_dir, out):
    """Redis, every service (each ready) and the receiver; registers the campaign. Returns the Target
    and every service's HTTP port."""
    redis_port = free_port()
    os.makedirs(os.path.join(out, "redis"), exist_ok=True)
    start_redis(processes, redis_port, os.path.join(out, "redis"))
    # The receiver's port is chosen first: only its host:port is allow-listed, so every other
    # 127.0.0.1 URL must still be refused as a postback destination.
    receiver_port = free_port()
    pipeline = Pipeline(
        processes,
        bin_dir,
        f"redis://127.0.0.1:{redis_port}/0",
        os.path.join(out, "keys"),
        uuid.uuid4().hex + uuid.uuid4().hex,
        POSTBACK_URL_ALLOWLIST=f"127.0.0.1:{receiver_port}",
        CLAIM_IDLE_MS="5000",  # a stage restarted after a crash claims its predecessor's pending soon
    )
    ports = {name: free_port() for name in SERVICES}
    pipeline.start_http(ports["ingest"], ports["admin"])
    for name in SERVICES[2:]:
        pipeline.start(name, {"HTTP_PORT": str(ports[name])})
    for name in SERVICES:
        wait_http(f"http://127.0.0.1:{ports[name]}/ready")
    pipeline.start_receiver(receiver_port, os.path.join(out, "postbacks.jsonl"))
    with open(os.path.join(pipeline.keys, "network.private.pem"), "rb") as f:
        network_key = serialization.load_pem_private_key(f.read(), None)
    app_key, fuzz_app_key = register(pipeline, receiver_port)
    target = Target(
        ingest_port=ports["ingest"],
        admin_port=ports["admin"],
        redis_port=redis_port,
        receiver_port=receiver_port,
        admin_token=pipeline.token,
        network_key=network_key,
        app_key=app_key,
        fuzz_app_key=fuzz_app_key,
    )
    return target, ports


def register(pipeline, receiver_port):
    """The campaign through the admin API: the network (with the run's network key) posting to the
    receiver, the publisher app listing it, the advertised app and the fuzzer's. Returns a key of each
    app: valid traffic's, and the fuzzer's (what it sends with it is authenticated, and told apart)."""
    admin, token = pipeline.admin, pipeline.token
    pipeline.register_network(NETWORK, f"http://127.0.0.1:{receiver_port}")
    http("PUT", f"{admin}/v1/admin/publisher-apps/{PUBLISHER}", {"AdNetworkIdentifiers": [NETWORK]}, token)
    for app in (APP, FUZZ_APP):
        http("PUT", f"{admin}/v1/admin/advertised-apps/{app}", {}, token)
    return [
        http("POST", f"{admin}/v1/admin/advertised-apps/{app}/keys", {}, token)["app-key"] for app in (APP, FUZZ_APP)
    ]
