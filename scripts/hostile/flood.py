"""The forged-network flood, before valid traffic starts: what anonymous impressions naming networks
nobody registered leave in Redis, in bytes per request and in keys."""

import json
import re
import time
import uuid

from cryptography.hazmat.primitives.asymmetric import ec

from harness import group_done, partitioned, sign_jws
from hostile.progress import log
from hostile.streams import command
from hostile.traffic import impression_body, impression_payload


def forged_network_flood(run, connection, count=2000):
    """Anonymous impressions naming unregistered ad networks (a random id each, a random key) and the
    registered network (a stranger's key), at the size a real impression has. Run before valid traffic
    starts, so Redis's growth is theirs alone: measured once the verifier refused them all. Target: ≤ 600
    bytes per request averaged, and no key naming an unregistered id. What stays: each refusal's entry on
    `rejected` (trimmed after STREAM_RETENTION_HOURS), the registered network's unsigned list (the last
    100) and its count; the events themselves leave `events` as they are refused. Returns the figures
    and what violates the targets."""
    target = run.target
    violations = []
    category = "forged-network-flood"

    def used_memory():
        info = command(connection, "INFO", "memory").decode()
        return int(re.search(r"used_memory:(\d+)", info).group(1))

    def keys():
        found, cursor = set(), "0"
        while True:
            cursor, batch = command(connection, "SCAN", cursor, "COUNT", 1000)
            cursor = cursor.decode()  # bytes, as every bulk reply of a binary connection
            found.update(k.decode() for k in batch)
            if cursor == "0":
                return found

    before_keys, before = keys(), used_memory()
    unregistered = []
    for n in range(count):
        key = ec.generate_private_key(ec.SECP256R1())
        if n % 2:
            network = f"forged-{uuid.uuid4().hex[:12]}.adattributionkit"
            unregistered.append(network)
        else:
            network = target.network
        jws = sign_jws(key, {"alg": "ES256", "kid": network}, impression_payload(network, target.app, target.publisher))
        status, data = run.call(
            category,
            "forged signature" if network == target.network else "unregistered network",
            "POST",
            "/v1/impressions",
            impression_body(jws, f"flood-{uuid.uuid4().hex}"),
            expect=202,
        )
        if status == 202:
            event = json.loads(data)["event-identifier"]
            run.seen.hostile_event_ids[event] = (
                f"flood: {'forged signature' if network == target.network else 'unregistered network'}"
            )
            run.seen.expected_verdicts[event] = (
                run.seen.hostile_event_ids[event],
                "invalid-signature" if network == target.network else "unknown-ad-network",
            )
    deadline = time.time() + 60
    while time.time() < deadline and not group_done(connection, "events", "verifier"):
        time.sleep(0.2)
    time.sleep(1)  # the refusal logs are written just after the verifier's commit
    after, after_keys = used_memory(), keys()
    new_keys = sorted(after_keys - before_keys)
    naming_unregistered = [k for k in new_keys if any(network in k for network in unregistered)]
    per_request = (after - before) / count

    def usage(stream):
        return sum(command(connection, "MEMORY", "USAGE", name, "SAMPLES", "0") or 0 for name in partitioned(stream))

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
        violations.append(
            f"forged-network flood: {len(naming_unregistered)} keys name an unregistered id ({naming_unregistered[:3]})"
        )
    if per_request > 600:
        violations.append(f"forged-network flood: {per_request:.0f} Redis bytes per forged request (target ≤ 600)")
    log(
        f"forged-network flood: {count} requests, {per_request:.0f} Redis bytes each, {len(new_keys)} new keys "
        f"({len(naming_unregistered)} naming an unregistered id)"
    )
    return result, violations
