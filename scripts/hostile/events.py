"""Hostile events ingest accepts (they have the right shape) and the verifier must refuse with a
reason: replayed impressions, and values at the edges of Int64 that must crash no stage. What the
Swift corpus (Tests/PipelineTests/HostileInputTests*.swift) already sends is not sent again here: the
replay from another device, the forged impressions (signatures, keys, algorithms, timestamps, empty
segments), and the Int64 times ingest refuses as invalid-time."""

import json
import time
import uuid

from hostile.streams import verdicts_so_far
from hostile.traffic import campaign_jws, impression_body, now_ms


def replays(run):
    """The same signed impression twice: the second is refused by the verifier as impression-replayed.
    With the same Idempotency-Key, ingest answers the first event id and adds nothing."""
    target = run.target
    category = "replay"
    for n in range(5):
        jws = campaign_jws(target)
        first_body = impression_body(jws, f"replay-{n}")
        status, data = run.call(category, "original", "POST", "/v1/impressions", first_body, expect=202)
        first = json.loads(data)["event-identifier"]
        run.seen.allowed_verified[first] = "replay original (valid)"
        # Let the verifier see the original first: a replay is only a replay after it.
        deadline = time.time() + 20
        while time.time() < deadline and first not in verdicts_so_far(target.redis_port):
            time.sleep(0.1)
        variants = [
            ("same body again", first_body, {}),
            (
                "same JWS, view interaction",
                {**first_body, "interaction": {"type": "view", "begin": now_ms() - 5000, "time": now_ms()}},
                {},
            ),
        ]
        for name, body, headers in variants:
            status, data = run.call(category, name, "POST", "/v1/impressions", body, headers, expect=202)
            if status == 202:
                event = json.loads(data)["event-identifier"]
                run.seen.hostile_event_ids[event] = f"replay: {name}"
                run.seen.expected_verdicts[event] = (f"replay: {name}", "impression-replayed")
    # Idempotency-Key: the retry gets the first answer; another body with the key gets 422.
    jws = campaign_jws(target)
    key = "hostile-" + uuid.uuid4().hex
    body = impression_body(jws, "idempotent-device")
    _, first = run.call(
        category, "Idempotency-Key first", "POST", "/v1/impressions", body, {"Idempotency-Key": key}, expect=202
    )
    _, again = run.call(
        category, "Idempotency-Key retry", "POST", "/v1/impressions", body, {"Idempotency-Key": key}, expect=202
    )
    first_id = json.loads(first)["event-identifier"]
    run.seen.allowed_verified[first_id] = "idempotent original (valid)"
    if json.loads(again).get("event-identifier") != first_id:
        run.seen.unexpected.append(
            {
                "category": category,
                "case": "Idempotency-Key retry",
                "expected": f"event id {first_id}",
                "got": again[:200].decode(),
            }
        )
    # An impression's key is its network's (the JWS's kid): same network and device, another body.
    other = dict(body, interaction={"type": "click", "time": now_ms() + 1, "loaded-at": now_ms() - 400})
    run.call(
        category,
        "Idempotency-Key with another body",
        "POST",
        "/v1/impressions",
        other,
        {"Idempotency-Key": key},
        expect=(422, "idempotency-key-reused"),
    )


def extreme_values(run):
    """Properly signed impressions and app-key-authenticated conversions, updates and activity whose
    times and counts sit at the edges of Int64: what a hostile device (it holds the JWS it was shown
    and the app's key) can send. The verifier computes `time - loaded-at` and `time - begin`
    (ImpressionRules.check); attribution-winner and the scheduler add windows to conversion times.
    None of it may crash a stage; the impressions must be refused, not verified."""
    target = run.target
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
        ("click at Int64.min, loaded at 1", {"type": "click", "time": low, "loaded-at": 1}, "click-too-late"),
        ("click now, loaded at Int64.min", {"type": "click", "time": t, "loaded-at": low}, "click-too-late"),
    ]

    def wait_verdict(event, seconds=6):
        deadline = time.time() + seconds
        while time.time() < deadline and event not in verdicts_so_far(target.redis_port):
            time.sleep(0.2)

    overflowing = []
    for name, interaction, reason in interactions:
        jws = campaign_jws(target)
        body = {"device-identifier": f"extreme-{uuid.uuid4().hex[:8]}", "impression": jws, "interaction": interaction}
        if reason:
            overflowing.append((name, body, reason))
            continue
        status, data = run.call(category, f"impression: {name}", "POST", "/v1/impressions", body, expect={202, 400})
        if status == 202:
            wait_verdict(json.loads(data)["event-identifier"])
    # Conversions and what follows them, for the fuzzer's app (its own key), each on a device with a
    # real impression so that they are attributed and reach the scheduler.
    auth = {"Authorization": "Bearer " + target.fuzz_app_key}
    events = [
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
    jws = campaign_jws(target, app=target.fuzz_app)
    _, data = run.call(
        category,
        "impression for the fuzzer's app (valid)",
        "POST",
        "/v1/impressions",
        impression_body(jws, device),
        expect=202,
    )
    run.seen.allowed_verified[json.loads(data)["event-identifier"]] = "valid impression for the extreme-values device"
    for name, path, fields in events:
        body = {"device-identifier": device, "advertised-item-identifier": target.fuzz_app, **fields}
        status, data = run.call(category, name, "POST", path, body, auth)
        if status == 202:
            wait_verdict(json.loads(data)["event-identifier"])
    time.sleep(3)  # past CONVERSION_SETTLE_MS: attribution and scheduling happen now
    for name, body, reason in overflowing:
        status, data = run.call(category, f"impression: {name}", "POST", "/v1/impressions", body, expect={202, 400})
        if status == 202:
            run.seen.expected_verdicts[json.loads(data)["event-identifier"]] = (f"extreme: {name}", reason)
    time.sleep(2)
