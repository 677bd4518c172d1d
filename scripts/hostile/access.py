"""Registrations whose postback URL aims at the operator's own network through a name only DNS makes
private. Every credential on every admin and event route, and every literal address, are the Swift
corpus's (Tests/PipelineTests/HostileInputTests+Credentials.swift, +Destinations.swift)."""

import socket

from cryptography.hazmat.primitives import serialization


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
