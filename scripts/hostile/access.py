"""Attacks on who may do what: admin routes without or with a wrong token, event routes with missing,
forged or foreign app keys, and registrations whose postback URL (or copy endpoint) aims at the
operator's own network."""

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
    for method, path, body in routes:
        for name, value in tokens:
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
    # The admin token must not work as an app key, nor an app key of another app.
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
        for path, body in [
            ("/v1/conversions", conversion),
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
    """Registration refuses postback URLs (and copy endpoints) aimed at the operator's own network.
    `literal`: the address is in the URL itself (or a localhost name): registration must refuse.
    `dns`: only DNS says the name is private; registration is DNS-free by design (AdminRoutes), the
    dispatcher resolves before every POST, so an acceptance here is reported, not a violation."""
    target = run.target
    category = "postback-url"
    public_key = (
        target.network_key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    cases = [
        ("literal", "https://169.254.169.254/latest/meta-data/"),
        ("literal", "https://169.254.169.254:443/"),
        ("literal", "https://10.0.0.1/p"),
        ("literal", "https://10.255.255.255/p"),
        ("literal", "https://172.16.0.1/p"),
        ("literal", "https://192.168.1.1/p"),
        ("literal", "https://127.0.0.1/p"),
        ("literal", f"https://127.0.0.1:{target.receiver_port + 1}/p"),
        ("literal", f"http://127.0.0.1:{target.receiver_port + 1}/p"),
        ("literal", "https://127.8.9.10/p"),
        ("literal", "https://0.0.0.0/p"),
        ("literal", "https://100.64.0.1/p"),
        ("literal", "https://[::1]/p"),
        ("literal", "https://[::]/p"),
        ("literal", "https://[0:0:0:0:0:0:0:1]/p"),
        ("literal", "https://[fe80::1]/p"),
        ("literal", "https://[fd00::1]/p"),
        ("literal", "https://[::ffff:169.254.169.254]/p"),
        ("literal", "https://[::ffff:7f00:1]/p"),
        ("literal", "https://[64:ff9b::a9fe:a9fe]/p"),
        ("literal", "https://localhost/p"),
        ("literal", "https://LOCALHOST/p"),
        ("literal", "https://api.localhost/p"),
        ("literal", "https://localhost:8443/p"),
        # Other spellings of an IPv4 literal that getaddrinfo/inet_aton (and browsers) read as 127.0.0.1 / 169.254.169.254:
        ("literal", "https://2130706433/p"),
        ("literal", "https://0x7f000001/p"),
        ("literal", "https://0177.0.0.1/p"),
        ("literal", "https://127.1/p"),
        ("literal", "https://169.254.169.254./p"),
        ("literal", "https://localhost./p"),
        ("literal", "https://[fe80::1%25eth0]/p"),
        ("literal", "https://%31%32%37.0.0.1/p"),
        # Not https, not a URL, hidden hosts:
        ("literal", "http://example.com/p"),
        ("literal", "HTTP://example.com/p"),
        ("literal", "ftp://example.com/p"),
        ("literal", "file:///etc/passwd"),
        ("literal", "gopher://127.0.0.1:6379/_INFO"),
        ("literal", "https:/example.com/p"),
        ("literal", "//example.com/p"),
        ("literal", "https://user@169.254.169.254/p"),
        ("literal", "https://example.com@127.0.0.1/p"),
        ("literal", "https://127.0.0.1#@example.com/p"),
        ("literal", "https://example.com:0/p"),
        ("literal", "https://example.com:99999/p"),
        ("literal", "https:// example.com/p"),
        ("literal", "https://exa\u0000mple.com/p"),
        ("literal", ""),
        ("literal", "x" * 10_000),
        ("dns", f"https://{socket.gethostname()}/p"),
        ("dns", "https://localhost.localdomain/p"),
        ("dns", "https://ip6-localhost/p"),
        ("dns", "https://metadata.google.internal/computeMetadata/v1/"),
        ("dns", "https://127.0.0.1.nip.io/p"),
        ("dns", "https://\u24db\u24de\u24d2\u24d0\u24db\u24d7\u24de\u24e2\u24e3/p"),
    ]
    for n, (kind, url) in enumerate(cases):
        path = f"/v1/admin/ad-networks/ssrf-{n}.net"
        status, h, data = run.http(
            "PUT",
            path,
            {"public-key": public_key, "postback-url": url},
            {"Authorization": "Bearer " + target.admin_token},
        )
        reason = run.seen.observe(category, f"postback-url {url[:80]!r}", status, h, data, expect=None)
        if status != 400:
            entry = {
                "category": category,
                "case": f"postback-url {url[:80]!r} ({kind})",
                "expected": "400 destination-*",
                "got": status,
                "reason": reason,
                "body": data[:160].decode("utf-8", "replace"),
            }
            (run.seen.unexpected if kind == "literal" else run.seen.findings).append(
                entry if kind == "literal" else {"kind": "accepted at registration (DNS-only private name)", **entry}
            )
    # The same rules for the advertiser's copy endpoint.
    for url in [
        "https://169.254.169.254",
        "https://10.1.2.3",
        "https://[::1]",
        "http://example.com",
        "https://localhost",
        "https://2130706433",
        "file:///etc/passwd",
    ]:
        status, h, data = run.http(
            "PUT",
            "/v1/admin/advertised-apps/91003",
            {"AttributionCopyEndpoint": url},
            {"Authorization": "Bearer " + target.admin_token},
        )
        reason = run.seen.observe(category, f"AttributionCopyEndpoint {url!r}", status, h, data)
        if status != 400:
            run.seen.unexpected.append(
                {
                    "category": category,
                    "case": f"AttributionCopyEndpoint {url!r}",
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
