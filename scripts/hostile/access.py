"""Attacks on who may do what: admin routes without or with a wrong token, event routes with missing,
forged or foreign app keys, and registrations whose postback URL (or copy endpoint) aims at the
operator's own network. The cells the Swift corpus (Tests/PipelineTests/HostileInputTests.swift)
already sends are left out: it owns them, and it runs in CI."""

import base64
import socket

from cryptography.hazmat.primitives import serialization

from hostile.traffic import now_ms


def admin_auth(run):
    """Every admin route without a token, with a wrong one, and with near misses; event routes with
    missing, forged and foreign app keys."""
    target = run.target
    category = "auth"
    routes = [
        ("PUT", "/v1/admin/ad-networks/auth.net", {"public-key": "x", "postback-url": "https://example.com/p"}),
        ("GET", f"/v1/admin/ad-networks/{target.network}", None),
        ("GET", f"/v1/admin/ad-networks/{target.network}/rejections", None),
        ("PUT", "/v1/admin/publisher-apps/91002", {"AdNetworkIdentifiers": [target.network]}),
        ("PUT", f"/v1/admin/advertised-apps/{target.app}", {}),
        ("POST", f"/v1/admin/advertised-apps/{target.app}/keys", None),
        ("GET", f"/v1/admin/advertised-apps/{target.app}/rejections", None),
        ("GET", "/v1/admin/dead-letters", None),
        ("POST", "/v1/admin/dead-letters/replay", None),
        ("POST", "/v1/admin/dead-letters/1-0/replay", None),
        ("PUT", f"/v1/admin/advertised-apps/{target.app}/conversion-value-schema", {}),
        ("GET", f"/v1/admin/advertised-apps/{target.app}/conversion-value-schema", None),
        ("GET", f"/v1/admin/advertised-apps/{target.app}/conversion-value-schema/1", None),
        ("DELETE", "/v1/admin/devices/valid-0", None),
    ]
    tokens = [
        ("no token", None),
        ("wrong token", "Bearer wrong"),
        ("token plus a byte", f"Bearer {target.admin_token}x"),
        ("token minus a byte", f"Bearer {target.admin_token[:-1]}"),
        ("lower-case scheme", f"bearer {target.admin_token}"),
        ("Basic scheme", "Basic " + base64.b64encode(f"admin:{target.admin_token}".encode()).decode()),
        ("tab instead of a space", f"Bearer\t{target.admin_token}"),
        ("empty bearer", "Bearer "),
        ("two spaces", f"Bearer  {target.admin_token}"),
        ("app key", f"Bearer {target.app_key}"),
        ("token as a query parameter", "query"),
    ]
    # The Swift corpus's "admin without token", "… with a wrong token", "… the token plus a byte" and
    # "… with an app key" (PUT /v1/admin/advertised-apps/1).
    swift_route = ("PUT", f"/v1/admin/advertised-apps/{target.app}")
    swift_tokens = {"no token", "wrong token", "token plus a byte", "app key"}
    for method, path, body in routes:
        for name, value in tokens:
            if (method, path) == swift_route and name in swift_tokens:
                continue
            headers = {}
            request_path = path
            if value == "query":
                request_path = path + f"?token={target.admin_token}&access_token={target.admin_token}"
            elif value is not None:
                headers["Authorization"] = value
            run.call(
                category, f"{method} {path}: {name}", method, request_path, body, headers, expect=(401, "unauthorized")
            )
    # With the token: path and query values the routes must refuse with 4xx (the dead-letter id check
    # lets through digit-and-dash strings Redis refuses as stream ids: DeadLetterRoutes).
    admin = {"Authorization": "Bearer " + target.admin_token}
    for path in [
        "/v1/admin/dead-letters/99999999999999999999-0/replay",
        "/v1/admin/dead-letters/1-2-3/replay",
        "/v1/admin/dead-letters/-/replay",
        "/v1/admin/dead-letters/1--1/replay",
        "/v1/admin/dead-letters/%C2%BD/replay",
        "/v1/admin/dead-letters/%D9%A1-0/replay",
        "/v1/admin/dead-letters/0-0/replay",
    ]:
        run.call(category, f"POST {path} (admin)", "POST", path, None, admin, expect={400, 404})
    for query in ["count=-1", "count=0", "count=99999999999999999999", "count=abc", "start=zzz", "count=1&count=2"]:
        run.call(
            category,
            f"GET /v1/admin/dead-letters?{query} (admin)",
            "GET",
            f"/v1/admin/dead-letters?{query}",
            None,
            admin,
            expect={200, 400},
        )
    for path in [
        f"/v1/admin/advertised-apps/{target.app}/conversion-value-schema/0",
        f"/v1/admin/advertised-apps/{target.app}/conversion-value-schema/-1",
        f"/v1/admin/advertised-apps/{target.app}/conversion-value-schema/99999999999999999999",
        "/v1/admin/devices/" + "d" * 200,
        "/v1/admin/devices/%2A",
        "/v1/admin/devices/a%00b",
    ]:
        method = "DELETE" if "/devices/" in path else "GET"
        run.call(category, f"{method} {path[:80]} (admin)", method, path, None, admin, expect={200, 400, 404})
    # The admin token must not work as an app key, nor an app key of another app. On /v1/conversions
    # the Swift corpus has no key, a forged one and another app's ("conversion without app key", "…
    # with an unknown app key", "… with another app's key").
    conversion = {
        "device-identifier": "auth-d",
        "advertised-item-identifier": target.app,
        "conversion-type": "download",
        "time": now_ms(),
    }
    for name, value, expect in [
        ("no app key", None, (401, "missing-app-key")),
        ("forged app key", "Bearer ak_forged", (401, "invalid-app-key")),
        ("admin token as app key", f"Bearer {target.admin_token}", (401, "invalid-app-key")),
        ("another app's key", f"Bearer {target.fuzz_app_key}", (403, "app-key-mismatch")),
        ("100 KB app key", "Bearer " + "k" * 100_000, {401, 431, 400}),
    ]:
        in_swift = name in ("no app key", "forged app key", "another app's key")
        for path, body in [
            *([] if in_swift else [("/v1/conversions", conversion)]),
            (
                "/v1/conversion-value-updates",
                {
                    "device-identifier": "auth-d",
                    "advertised-item-identifier": target.app,
                    "time": now_ms(),
                    "fineConversionValue": 3,
                },
            ),
            (
                "/v1/activity",
                {
                    "device-identifier": "auth-d",
                    "advertised-item-identifier": target.app,
                    "time": now_ms(),
                    "sessions": 1,
                },
            ),
        ]:
            headers = {"Authorization": value} if value else {}
            # A 100 KB header is refused by the HTTP parser before any route: protocol level.
            run.call(
                category,
                f"POST {path}: {name}",
                "POST",
                path,
                body,
                headers,
                expect=expect,
                protocol_level="100 KB" in name,
            )


def postback_urls(run):
    """Registration against names that only DNS makes private. Literal addresses, localhost names, other
    schemes and malformed URLs (and the copy endpoint's) are the Swift corpus's, with their reasons
    (HostileInputTests+Destinations.swift). Registration is DNS-free by design (AdminRoutes) and the
    dispatcher resolves before every POST, so an acceptance here is reported as a finding, not a violation."""
    target = run.target
    category = "postback-url"
    public_key = (
        target.network_key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    names = [
        f"https://{socket.gethostname()}/p",
        "https://localhost.localdomain/p",
        "https://ip6-localhost/p",
        "https://metadata.google.internal/computeMetadata/v1/",
        "https://127.0.0.1.nip.io/p",
        "https://\u24db\u24de\u24d2\u24d0\u24db\u24d7\u24de\u24e2\u24e3/p",
    ]
    for n, url in enumerate(names):
        path = f"/v1/admin/ad-networks/ssrf-{n}.net"
        status, h, data = run.http(
            "PUT",
            path,
            {"public-key": public_key, "postback-url": url},
            {"Authorization": "Bearer " + target.admin_token},
        )
        reason = run.seen.observe(category, f"postback-url {url[:80]!r}", status, h, data, expect=None)
        if status != 400:
            run.seen.findings.append(
                {
                    "kind": "accepted at registration (DNS-only private name)",
                    "category": category,
                    "case": f"postback-url {url[:80]!r}",
                    "expected": "400 destination-*",
                    "got": status,
                    "reason": reason,
                    "body": data[:160].decode("utf-8", "replace"),
                }
            )
    # Control: the allow-listed receiver (host:port) is accepted.
    status, h, data = run.http(
        "PUT",
        "/v1/admin/ad-networks/ssrf-control.net",
        {"public-key": public_key, "postback-url": f"http://127.0.0.1:{target.receiver_port}/postbacks"},
        {"Authorization": "Bearer " + target.admin_token},
    )
    run.seen.observe(category, "allow-listed receiver (control)", status, h, data, expect=200)
