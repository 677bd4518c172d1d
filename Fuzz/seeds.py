#!/usr/bin/env python3
"""Writes the seed corpora under Fuzz/Corpus/<target>/ from the repository's own fixtures: the scenario
apps (Scenarios/*.json), Apple's example SKAdNetwork postbacks (Tests/AttributionModelTests/Fixtures),
the postbacks and impressions the unit tests build. JWS and SKAdNetwork impressions are signed with the
harnesses' fixed key (scalar 0x11...11, Fuzz/Sources/FuzzSupport/FuzzFixture.swift), so they verify and
the fuzzer starts past the signature. Needs Python's `cryptography` (scripts/lib.sh installs it).

    python3 Fuzz/seeds.py        # rewrites Fuzz/Corpus; the output is committed
"""
import base64
import glob
import hashlib
import json
import os
import plistlib
import re
import shutil
import struct

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "Fuzz", "Corpus")
KEY = ec.derive_private_key(int.from_bytes(b"\x11" * 32, "big"), ec.SECP256R1())
KID = "fuzz/0"
NETWORK = "example.adattributionkit"
RECEIVED_AT = 1_700_000_000_000  # FuzzFixture.receivedAt
SEPARATOR = "\u2063"


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def compact(payload, header):
    """ES256 compact JWS: the signature is raw R||S, 64 bytes."""
    text = b64url(json.dumps(header, separators=(",", ":")).encode()) + "." + b64url(payload)
    r, s = decode_dss_signature(KEY.sign(text.encode(), ec.ECDSA(hashes.SHA256(), deterministic_signing=True)))
    return text + "." + b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big"))


def skan_signature(fields):
    """SKAdNetwork: DER ECDSA over the U+2063-joined fields, standard base64."""
    message = SEPARATOR.join(str(field) for field in fields).encode()
    return base64.b64encode(KEY.sign(message, ec.ECDSA(hashes.SHA256(), deterministic_signing=True))).decode()


def dumps(value):
    return json.dumps(value, separators=(",", ":")).encode()


def jws_seeds():
    postback = {
        "impression-type": "app-impression", "ad-network-identifier": NETWORK, "source-identifier": "39",
        "advertised-item-identifier": 1108187390, "conversion-type": "download",
        "marketplace-identifier": "com.apple.AppStore", "postback-identifier": "0b9a7a5e-0c0e-4a53-9d53-2f1e9d4c8b21",
        "postback-sequence-index": 0, "did-win": True,
    }
    impression = {
        "impression-identifier": "e9a3c1c4-7c1b-4d0e-9a55-0b3c7f0b2d11", "ad-network-identifier": NETWORK,
        "advertised-item-identifier": 1108187390, "publisher-item-identifier": 1234567891, "source-identifier": 3120,
        "timestamp": RECEIVED_AT - 60_000, "impression-type": "app-impression", "eligible-for-re-engagement": True,
    }
    signed_postback = compact(dumps(postback), {"alg": "ES256", "kid": KID})
    signed_impression = compact(dumps(impression), {"alg": "ES256", "kid": NETWORK})
    click = {"type": "click", "time": RECEIVED_AT - 30_000, "loaded-at": RECEIVED_AT - 60_000}
    view = {"type": "view", "time": RECEIVED_AT - 30_000, "begin": RECEIVED_AT - 40_000}
    return {
        "postback-jws": signed_postback.encode(),
        "postback-body": dumps({"jws-string": signed_postback, "ad-interaction-type": "click", "conversion-value": 42}),
        "postback-body-coarse": dumps(
            {"jws-string": signed_postback, "ad-interaction-type": "view", "coarse-conversion-value": "high",
             "country-code": "US"}),
        # PostbackVerifierTests: an escaped slash in kid, and a payload with extra keys and `reengagement`.
        "postback-jws-escaped-kid": compact(dumps(postback), {"alg": "ES256", "kid": "fuzz\\/0"}).encode(),
        "postback-jws-none": compact(dumps(postback), {"alg": "none", "kid": KID}).encode(),
        "postback-jws-reengagement": compact(
            dumps(dict(postback, **{"conversion-type": "reengagement", "future-key": 1})),
            {"alg": "ES256", "kid": KID, "typ": "JWT"}).encode(),
        "impression-jws": signed_impression.encode(),
        "impression-request-click": dumps({"device-identifier": "device-1", "impression": signed_impression,
                                           "interaction": click}),
        "impression-request-view": dumps({"device-identifier": "device-1", "impression": signed_impression,
                                          "interaction": view}),
        # Device times at the 64-bit limits: they trapped ImpressionRules.check before it saturated.
        "impression-request-extreme-times": dumps({
            "device-identifier": "device-1", "impression": signed_impression,
            "interaction": {"type": "click", "time": -2**63, "loaded-at": RECEIVED_AT}}),
        "three-parts": b"a.b.c",
    }


def apple_examples():
    """The five example postbacks Apple publishes, as the fixtures quote them."""
    fixture = open(os.path.join(ROOT, "Tests/AttributionModelTests/Fixtures/SKAdNetworkFixtures.swift")).read()
    return [json.loads(text) for text in re.findall(r'"""\n(.*?)\n\s*"""', fixture, re.S)]


def skan_seeds():
    seeds = {f"apple-example-{i}": dumps(example) for i, example in enumerate(apple_examples())}
    common = {"ad-network-id": "example123.skadnetwork", "app-id": 525463029,
              "transaction-id": "6aafb7a5-0170-41b5-bbe4-fe71dedf1e28", "attribution-signature": "MEUCIQ=="}
    # One postback per version with the fields SKANFixture.postback gives it.
    seeds["postback-1.0"] = dumps(dict(common, **{"campaign-id": 42}))
    seeds["postback-2.0"] = dumps(dict(common, **{"version": "2.0", "campaign-id": 42, "redownload": True,
                                                  "source-app-id": 1234567891, "conversion-value": 20}))
    seeds["postback-2.2"] = dumps(dict(common, **{"version": "2.2", "campaign-id": 42, "redownload": True,
                                                  "source-app-id": 1234567891, "fidelity-type": 1}))
    v4 = {"version": "4.0", "ad-network-id": "example123.skadnetwork", "source-identifier": "5239",
          "app-id": 525463029, "transaction-id": "6aafb7a5-0170-41b5-bbe4-fe71dedf1e28", "redownload": False,
          "source-app-id": 1234567891, "fidelity-type": 1, "did-win": True, "postback-sequence-index": 0,
          "conversion-value": 63, "country-code": "US"}
    v4["attribution-signature"] = skan_signature(
        [v4[k] for k in ("version", "ad-network-id", "source-identifier", "app-id", "transaction-id")]
        + ["false", v4["source-app-id"], v4["fidelity-type"], "true", v4["postback-sequence-index"]])
    seeds["postback-4.0-signed"] = dumps(v4)
    impression = {"version": "4.0", "ad-network-id": "example123.skadnetwork", "source-identifier": 3120,
                  "itunes-item-id": 525463029, "nonce": "68483ef6-0678-41b7-8bd3-a30c2a0a4e0c",
                  "source-app-id": 1234567891, "fidelity-type": 1, "timestamp": RECEIVED_AT - 60_000}
    impression["signature"] = skan_signature([impression[k] for k in (
        "version", "ad-network-id", "source-identifier", "itunes-item-id", "nonce", "source-app-id", "fidelity-type",
        "timestamp")])
    seeds["impression-4.0"] = dumps(impression)
    seeds["impression-request-click"] = dumps({
        "device-identifier": "device-1", "skadnetwork-impression": impression,
        "interaction": {"type": "click", "time": RECEIVED_AT - 30_000, "loaded-at": RECEIVED_AT - 60_000}})
    view = dict(impression, **{"fidelity-type": 0})
    seeds["impression-request-view"] = dumps({
        "device-identifier": "device-1", "skadnetwork-impression": view,
        "interaction": {"type": "view", "time": RECEIVED_AT - 30_000, "begin": RECEIVED_AT - 40_000}})
    # Device times at the 64-bit limits: they trapped ImpressionRules.check before it saturated.
    seeds["impression-request-extreme-times"] = dumps({
        "device-identifier": "device-1", "skadnetwork-impression": impression,
        "interaction": {"type": "click", "time": 2**63 - 1, "loaded-at": -2**63}})
    # Keys as an ad network registers them: Apple's published base64 DER, PEM, and the DER itself.
    spki = KEY.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    seeds["key-apple-p256"] = (b"MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEWdp8GPcGqmhgzEFj9Z2nSpQVddayaPe4FMzqM9wib1+aHaaIzoHo"
                               b"LN9zW4K8y4SPykE3YVK3sVqW6Af0lfx3gg==")
    seeds["key-apple-p192"] = b"MEkwEwYHKoZIzj0CAQYIKoZIzj0DAQEDMgAEMyHD625uvsmGq4C43cQ9BnfN2xslVT5V1nOmAMP6qaRRUll3PB1JYmgSm+62sosG"
    seeds["key-pem"] = KEY.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo)
    seeds["key-der"] = spki
    return seeds


def plist_seeds():
    apps = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "Scenarios", "*.json"))):
        app = json.load(open(path)).get("app")
        if app is not None:
            apps[json.dumps(app, sort_keys=True)] = app
    seeds = {}
    for i, app in enumerate(apps.values()):
        seeds[f"scenario-app-{i}"] = dumps(app)
    everything = {
        "AttributionWindows": {"global": {"install": {"click": 7, "view": 1}},
                               NETWORK: {"install": {"click": 30, "ignoreInteractionType": "view"}}},
        "AttributionCooldown": {"install-cooldown-hours": 24, "re-engagement-cooldown-hours": 48},
        "AttributionCopyEndpoint": "https://example.com",
        "EligibleForAdAttributionKitReengagementPostbackCopies": True,
        "EligibleForAdAttributionKitOverlappingConversions": False,
    }
    seeds["json-flat"] = dumps(everything)
    seeds["json-nested"] = dumps({"AdAttributionKitConfigurations": everything})
    seeds["json-empty"] = b"{}"
    info_plist = {"CFBundleName": "App", "CFBundleIdentifier": "com.example.app",
                  "AdAttributionKitConfigurations": everything}
    seeds["info-plist-xml"] = plistlib.dumps(info_plist, fmt=plistlib.FMT_XML)
    seeds["info-plist-binary"] = plistlib.dumps(info_plist, fmt=plistlib.FMT_BINARY)
    seeds["plist-xml-flat"] = plistlib.dumps({"AttributionCooldown": {"install-cooldown-hours": 721}})
    # fuzz-plist's first finding, cut down: {"k": set(["a"])} as a binary plist (plistlib writes no sets).
    seeds["binary-plist-with-set"] = binary_plist([b"\xd1\x01\x02", b"\x51k", b"\xc1\x03", b"\x51a"])
    return seeds


def binary_plist(objects):
    """bplist00 with one-byte offsets and references; the first object is the top."""
    body, offsets = b"bplist00", []
    for encoded in objects:
        offsets.append(len(body))
        body += encoded
    table = len(body)
    return body + bytes(offsets) + b"\0" * 6 + bytes([1, 1]) + struct.pack(">QQQ", len(objects), 0, table)


def write(target, seeds):
    directory = os.path.join(CORPUS, target)
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    for name, data in sorted(seeds.items()):
        with open(os.path.join(directory, name), "wb") as out:
            out.write(data)
    print(f"{target}: {len(seeds)} seeds, {sum(len(d) for d in seeds.values())} bytes")


if __name__ == "__main__":
    write("fuzz-jws", jws_seeds())
    write("fuzz-skan", skan_seeds())
    write("fuzz-plist", plist_seeds())
