import AttributionCrypto
import AttributionModel
import CryptoPrimitives
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceRuntime
import TestSupport
import Testing

extension PipelineSuites {
    /// A corpus of malformed and hostile inputs against the real ingest and verifier: each is refused with
    /// its reason code, either by ingest (4xx problem JSON, nothing enters the pipeline) or by the verifier
    /// (on `rejected`, with the reason an ad network can look up). Never a 5xx, never a crash, and valid
    /// traffic keeps flowing.
    @Suite("Hostile input corpus", .serialized)
    struct HostileInputTests {
        let http = HTTPTestClient()
        static let app: ItemIdentifier = 4242
        static let otherApp: ItemIdentifier = 4343
        static let publisher: ItemIdentifier = 777
        static let network = "corpus.adattributionkit"

        enum Expectation {
            /// ingest answers this status and reason
            case ingest(Int, String)
            /// ingest accepts (202), the verifier refuses with this reason
            case verifier(RejectionReason)
            /// accepted all the way to `verified`
            case verified
        }

        struct Case {
            let name: String
            var method = "POST"
            var path = "/v1/impressions"
            let body: String
            var token: String? = nil
            var contentType: String? = nil
            var idempotencyKey: String? = nil
            let expect: Expectation
        }

        static func now() -> Milliseconds { Milliseconds(Date().timeIntervalSince1970 * 1000) }

        /// A compact JWS from raw header and payload JSON, signed (ES256, raw R‖S) with `key` unless a
        /// signature is given.
        static func jws(header: String, payload: String, key: P256.Signing.PrivateKey, signature: String? = nil) -> String {
            let input = Base64URL.encode(Data(header.utf8)) + "." + Base64URL.encode(Data(payload.utf8))
            let sig = signature ?? Base64URL.encode(try! key.signature(for: Data(input.utf8)).rawRepresentation)
            return input + "." + sig
        }

        static func payload(
            id: String = UUID().uuidString, network: String = HostileInputTests.network,
            app: ItemIdentifier = HostileInputTests.app,
            publisher: ItemIdentifier = HostileInputTests.publisher, source: String = "1234", timestamp: Milliseconds? = nil,
            type: String = "app-impression", extra: String = ""
        ) -> String {
            #"{"impression-identifier":"\#(id)","ad-network-identifier":"\#(network)","advertised-item-identifier":\#(app),"publisher-item-identifier":\#(publisher),"source-identifier":\#(source),"timestamp":\#(timestamp ?? now()),"impression-type":"\#(type)"\#(extra)}"#
        }

        /// A SKAdNetwork 4.0 impression body, signed with `key` (over the U+2063 message, DER, base64).
        static func skanBody(
            network: String = HostileInputTests.network, key: P256.Signing.PrivateKey,
            nonce: String = UUID().uuidString.lowercased(),
            fidelity: Int = 1, interaction: String? = nil, tamper: Bool = false
        ) -> String {
            var skan = SKANImpression(
                adNetworkIdentifier: AdNetworkIdentifier(network)!, sourceIdentifier: 4321,
                itunesItemIdentifier: HostileInputTests.app,
                nonce: nonce, sourceAppIdentifier: HostileInputTests.publisher, fidelityType: fidelity, timestamp: now())
            skan.signature = try! SKANSignature.sign(message: skan.signedMessage, with: key)
            if tamper { skan.sourceIdentifier = 4322 }
            let t = now()
            let interaction = interaction ?? #"{"type":"click","time":\#(t),"loaded-at":\#(t - 1000)}"#
            let json = String(decoding: try! JSONCoding.encoder.encode(skan), as: UTF8.self)
            return
                #"{"device-identifier":"device-\#(UUID().uuidString)","skadnetwork-impression":\#(json),"interaction":\#(interaction)}"#
        }

        /// Two devices in different partitions.
        static let replayDevices: (String, String) = {
            let first = "replay-device-0"
            let second = (1...).lazy.map { "replay-device-\($0)" }.first {
                testPartitioning.of(device: $0) != testPartitioning.of(device: first)
            }!
            return (first, second)
        }()

        static func impressionBody(_ jws: String, device: String = "device-\(UUID().uuidString)", interaction: String? = nil)
            -> String
        {
            let t = now()
            let interaction = interaction ?? #"{"type":"click","time":\#(t),"loaded-at":\#(t - 1000)}"#
            return #"{"device-identifier":"\#(device)","impression":"\#(jws)","interaction":\#(interaction)}"#
        }

        /// Found by the hostile-input run: silent connections and trickled bodies were held forever,
        /// so a few thousand of them would have locked everyone else out.
        @Test func idleAndTricklingClientsAreCutOff() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            let pipeline = try PipelineProcesses(redis: redis, timeScale: 1, extraEnvironment: ["HTTP_IDLE_TIMEOUT_MS": "800"])
            defer { pipeline.stop() }
            #expect(try await http.waitUntilUp("\(pipeline.ingestURL)/health"), "ingest starts\n\(pipeline.logs())")
            let port = try #require(URL(string: pipeline.ingestURL)?.port)

            let idle = try #require(RawSocket(port: port))
            #expect(idle.read(timeout: .seconds(5)).closed, "a silent connection is closed after the idle timeout")

            // A byte every 200 ms is never idle for 800 ms; the body deadline still answers.
            let slow = try #require(RawSocket(port: port))
            slow.transmit(
                "POST /v1/impressions HTTP/1.1\r\nHost: ingest\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{")
            var answer = ""
            for _ in 0..<25 where !answer.contains("body-timeout") {
                slow.transmit(" ")
                answer += slow.read(timeout: .milliseconds(200)).text
            }
            #expect(answer.hasPrefix("HTTP/1.1 408"), "\(answer)")
            #expect(answer.contains("body-timeout"), "\(answer)")
            let events = try await streamLength(StreamNames.events, on: redis.connect())
            #expect(events == 0)
        }

        @Test func everyHostileInputIsRefusedWithItsReason() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            // Nothing here is delivered: the allow-list names one closed port, so loopback elsewhere is refused.
            let pipeline = try PipelineProcesses(
                redis: redis, timeScale: 1, extraEnvironment: ["POSTBACK_URL_ALLOWLIST": "127.0.0.1:9"])
            defer { pipeline.stop() }
            #expect(try await http.waitUntilUp("\(pipeline.ingestURL)/health"), "ingest starts\n\(pipeline.logs())")
            let admin = pipeline.adminToken
            let key = SigningKey.generate()
            let stranger = SigningKey.generate()
            let skanKey = SigningKey.generate()

            // Registrations the corpus runs against.
            func put(_ path: String, _ json: [String: Any]) async throws {
                let reply = try await http.send("PUT", pipeline.adminURL + path, json: json, token: admin)
                #expect(reply.status == 200, "\(path): \(String(decoding: reply.body, as: UTF8.self))")
            }
            try await put(
                "/v1/admin/ad-networks/\(Self.network)",
                [
                    "public-key": key.publicKey.pemRepresentation, "postback-url": "https://example.com/p",
                    "skan-public-key": skanKey.publicKey.derRepresentation.base64EncodedString(),
                ])
            try await put(
                "/v1/admin/ad-networks/unlisted.net",
                ["public-key": key.publicKey.pemRepresentation, "postback-url": "https://example.com/p"])
            try await put("/v1/admin/publisher-apps/\(Self.publisher)", ["AdNetworkIdentifiers": [Self.network]])
            try await put("/v1/admin/advertised-apps/\(Self.app)", [:])
            try await put("/v1/admin/advertised-apps/\(Self.otherApp)", [:])
            func issueKey(_ app: ItemIdentifier) async throws -> String {
                try #require(
                    try await http.send("POST", "\(pipeline.adminURL)/v1/admin/advertised-apps/\(app)/keys", token: admin).json[
                        "app-key"] as? String)
            }
            let appKey = try await issueKey(Self.app)
            let otherKey = try await issueKey(Self.otherApp)
            // Key rotation: `rotated.net` keeps its old key for an hour, `revoked.net` for no time at all.
            let newKey = SigningKey.generate()
            for (network, grace) in [("rotated.net", 3_600), ("revoked.net", 0)] {
                try await put(
                    "/v1/admin/ad-networks/\(network)",
                    ["public-key": key.publicKey.pemRepresentation, "postback-url": "https://example.com/p"])
                try await put(
                    "/v1/admin/ad-networks/\(network)",
                    [
                        "public-key": newKey.publicKey.pemRepresentation, "postback-url": "https://example.com/p",
                        "previous-key-grace-seconds": grace,
                    ])
            }
            try await put(
                "/v1/admin/publisher-apps/\(Self.publisher + 1)", ["AdNetworkIdentifiers": ["rotated.net", "revoked.net"]])

            let t = Self.now()
            let header = #"{"alg":"ES256","kid":"\#(Self.network)"}"#
            let good = Self.payload()
            let replayed = Self.payload()
            let p384 = ForeignKeys.p384PublicKeyPEM
            let viewDevice = "device-views"
            let view = { (begin: Milliseconds, end: Milliseconds) in #"{"type":"view","begin":\#(begin),"time":\#(end)}"# }
            let conversion = { (app: ItemIdentifier, extra: String) in
                #"{"device-identifier":"d","advertised-item-identifier":\#(app),"conversion-type":"download","time":\#(t)\#(extra)}"#
            }
            let update = { (fields: String) in
                #"{"device-identifier":"d","advertised-item-identifier":\#(Self.app),"time":\#(t),\#(fields)}"#
            }
            let plist = { (inner: String) in
                #"<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict><key>CFBundleName</key><string>App</string><key>AdAttributionKitConfigurations</key><dict>\#(inner)</dict></dict></plist>"#
            }

            var cases: [Case] = [
                // Shape: ingest refuses, nothing enters the pipeline.
                Case(name: "not JSON", body: "not json", expect: .ingest(400, "invalid-json")),
                Case(name: "empty body", body: "", expect: .ingest(400, "invalid-json")),
                Case(name: "array instead of object", body: "[1,2]", expect: .ingest(400, "invalid-json")),
                Case(
                    name: "missing device",
                    body: #"{"impression":"a.b.c","interaction":{"type":"click","time":1,"loaded-at":1}}"#,
                    expect: .ingest(400, "invalid-json")),
                Case(
                    name: "empty device",
                    body: #"{"device-identifier":"","impression":"a.b.c","interaction":{"type":"click","time":1,"loaded-at":1}}"#,
                    expect: .ingest(400, "invalid-device-identifier")),
                Case(
                    name: "129-byte device", body: Self.impressionBody("a.b.c", device: String(repeating: "d", count: 129)),
                    expect: .ingest(400, "invalid-device-identifier")),
                Case(name: "JWS with two parts", body: Self.impressionBody("a.b"), expect: .ingest(400, "invalid-components")),
                Case(
                    name: "JWS with four parts", body: Self.impressionBody("a.b.c.d"), expect: .ingest(400, "invalid-components")),
                Case(
                    name: "JWS of 9000 bytes", body: Self.impressionBody("a.b." + String(repeating: "A", count: 9_000)),
                    expect: .ingest(400, "invalid-components")),
                Case(
                    name: "unknown interaction type",
                    body: Self.impressionBody("a.b.c", interaction: #"{"type":"tap","time":1}"#),
                    expect: .ingest(400, "invalid-json")),
                Case(
                    name: "click without loaded-at",
                    body: Self.impressionBody("a.b.c", interaction: #"{"type":"click","time":1}"#),
                    expect: .ingest(400, "invalid-interaction")),
                Case(
                    name: "one-call view at time 1",
                    body: Self.impressionBody("a.b.c", interaction: #"{"type":"view","time":1}"#),
                    expect: .ingest(400, "invalid-time")),
                Case(
                    name: "time as a string",
                    body: Self.impressionBody("a.b.c", interaction: #"{"type":"click","time":"now","loaded-at":1}"#),
                    expect: .ingest(400, "invalid-json")),
                Case(
                    name: "time as a fraction",
                    body: Self.impressionBody("a.b.c", interaction: #"{"type":"click","time":1.5,"loaded-at":1}"#),
                    expect: .ingest(400, "invalid-json")),
                Case(
                    name: "oversized body", body: "{" + String(repeating: " ", count: 70_000) + "}",
                    expect: .ingest(413, "body-too-large")),
                Case(
                    name: "conversion without app key", path: "/v1/conversions", body: conversion(Self.app, ""),
                    expect: .ingest(401, "missing-app-key")),
                Case(
                    name: "conversion with an unknown app key", path: "/v1/conversions", body: conversion(Self.app, ""),
                    token: "ak_forged", expect: .ingest(401, "invalid-app-key")),
                Case(
                    name: "conversion with another app's key", path: "/v1/conversions", body: conversion(Self.app, ""),
                    token: otherKey, expect: .ingest(403, "app-key-mismatch")),
                Case(
                    name: "conversion type install", path: "/v1/conversions",
                    body: #"{"device-identifier":"d","advertised-item-identifier":1,"conversion-type":"install","time":1}"#,
                    token: appKey, expect: .ingest(400, "invalid-json")),
                Case(
                    name: "three-letter country", path: "/v1/conversions", body: conversion(Self.app, #","country-code":"USA""#),
                    token: appKey, expect: .ingest(400, "invalid-country-code")),
                Case(
                    name: "lower-case country", path: "/v1/conversions", body: conversion(Self.app, #","country-code":"us""#),
                    token: appKey, expect: .ingest(400, "invalid-country-code")),
                Case(
                    name: "negative item id", path: "/v1/conversions",
                    body: conversion(Self.app, "").replacingOccurrences(of: "\(Self.app)", with: "-1"), token: appKey,
                    expect: .ingest(400, "invalid-json")),
                // Times outside 2000–2100: one such click once crashed the verifier (Int64 overflow).
                Case(
                    name: "click at Int64.max loaded at -1",
                    body: Self.impressionBody(
                        "a.b.c", interaction: #"{"type":"click","time":9223372036854775807,"loaded-at":-1}"#),
                    expect: .ingest(400, "invalid-time")),
                Case(
                    name: "view from Int64.min",
                    body: Self.impressionBody(
                        "a.b.c", interaction: #"{"type":"view","begin":-9223372036854775808,"time":\#(t)}"#),
                    expect: .ingest(400, "invalid-time")),
                Case(
                    name: "conversion at Int64.max", path: "/v1/conversions",
                    body: conversion(Self.app, "").replacingOccurrences(
                        of: "\"time\":\(t)", with: "\"time\":9223372036854775807"),
                    token: appKey, expect: .ingest(400, "invalid-time")),
                Case(
                    name: "update in 1969", path: "/v1/conversion-value-updates",
                    body: update(#""fineConversionValue":1"#).replacingOccurrences(of: "\"time\":\(t)", with: "\"time\":-1"),
                    token: appKey, expect: .ingest(400, "invalid-time")),
                Case(
                    name: "fine value 64", path: "/v1/conversion-value-updates", body: update(#""fineConversionValue":64"#),
                    token: appKey, expect: .ingest(400, "value-out-of-range")),
                Case(
                    name: "fine value -1", path: "/v1/conversion-value-updates", body: update(#""fineConversionValue":-1"#),
                    token: appKey, expect: .ingest(400, "value-out-of-range")),
                Case(
                    name: "unknown coarse value", path: "/v1/conversion-value-updates",
                    body: update(#""fineConversionValue":1,"coarseConversionValue":"huge""#), token: appKey,
                    expect: .ingest(400, "invalid-json")),
                Case(
                    name: "unknown conversion type in update", path: "/v1/conversion-value-updates",
                    body: update(#""fineConversionValue":1,"conversionTypes":["purchase"]"#), token: appKey,
                    expect: .ingest(400, "invalid-json")),
                Case(
                    name: "lock as a string", path: "/v1/conversion-value-updates",
                    body: update(#""fineConversionValue":1,"lockPostback":"yes""#), token: appKey,
                    expect: .ingest(400, "invalid-json")),
                // Admin: no way in without the token; every value checked.
                Case(
                    name: "admin without token", method: "PUT", path: "/v1/admin/advertised-apps/1", body: "{}",
                    expect: .ingest(401, "unauthorized")),
                Case(
                    name: "admin with a wrong token", method: "PUT", path: "/v1/admin/advertised-apps/1", body: "{}",
                    token: "wrong",
                    expect: .ingest(401, "unauthorized")),
                Case(
                    name: "admin with the token plus a byte", method: "PUT", path: "/v1/admin/advertised-apps/1", body: "{}",
                    token: admin + "x", expect: .ingest(401, "unauthorized")),
                Case(
                    name: "admin with an app key", method: "PUT", path: "/v1/admin/advertised-apps/1", body: "{}", token: appKey,
                    expect: .ingest(401, "unauthorized")),
                Case(
                    name: "upper-case network id", method: "PUT", path: "/v1/admin/ad-networks/Upper.Net",
                    body: #"{"public-key":"x","postback-url":"https://x.example"}"#, token: admin,
                    expect: .ingest(400, "invalid-ad-network-identifier")),
                Case(
                    name: "Cyrillic network id", method: "PUT", path: "/v1/admin/ad-networks/ex%D0%B0mple.net",
                    body: #"{"public-key":"x","postback-url":"https://x.example"}"#, token: admin,
                    expect: .ingest(400, "invalid-ad-network-identifier")),
                Case(
                    name: "garbage public key", method: "PUT", path: "/v1/admin/ad-networks/a.net",
                    body: #"{"public-key":"x","postback-url":"https://x.example"}"#, token: admin,
                    expect: .ingest(400, "invalid-public-key")),
                Case(
                    name: "P-384 public key", method: "PUT", path: "/v1/admin/ad-networks/a.net",
                    body: #"{"public-key":\#(jsonString(p384)),"postback-url":"https://x.example"}"#, token: admin,
                    expect: .ingest(400, "invalid-public-key")),
                Case(
                    name: "ftp postback URL", method: "PUT", path: "/v1/admin/ad-networks/a.net",
                    body: #"{"public-key":\#(jsonString(key.publicKey.pemRepresentation)),"postback-url":"ftp://x/y"}"#,
                    token: admin,
                    expect: .ingest(400, "invalid-postback-url")),
                Case(
                    name: "grace over a year", method: "PUT", path: "/v1/admin/ad-networks/a.net",
                    body:
                        #"{"public-key":\#(jsonString(key.publicKey.pemRepresentation)),"postback-url":"https://x.example","previous-key-grace-seconds":31536001}"#,
                    token: admin, expect: .ingest(400, "value-out-of-range")),
                Case(
                    name: "view window 8 days", method: "PUT", path: "/v1/admin/advertised-apps/1",
                    body: #"{"AttributionWindows":{"global":{"install":{"view":8}}}}"#, token: admin,
                    expect: .ingest(400, "value-out-of-range")),
                Case(
                    name: "click window 0 days", method: "PUT", path: "/v1/admin/advertised-apps/1",
                    body: #"{"AttributionWindows":{"a.net":{"install":{"click":0}}}}"#, token: admin,
                    expect: .ingest(400, "value-out-of-range")),
                Case(
                    name: "cooldown 721 hours", method: "PUT", path: "/v1/admin/advertised-apps/1",
                    body: #"{"AdAttributionKitConfigurations":{"AttributionCooldown":{"install-cooldown-hours":721}}}"#,
                    token: admin,
                    expect: .ingest(400, "value-out-of-range")),
                Case(
                    name: "ignoreInteractionType in global", method: "PUT", path: "/v1/admin/advertised-apps/1",
                    body: #"{"AttributionWindows":{"global":{"install":{"ignoreInteractionType":"view"}}}}"#, token: admin,
                    expect: .ingest(200, "")),
                Case(
                    name: "unknown configuration key", method: "PUT", path: "/v1/admin/advertised-apps/1",
                    body: #"{"AttributionWindowz":{}}"#, token: admin, expect: .ingest(400, "unknown-key")),
                Case(
                    name: "window as a string", method: "PUT", path: "/v1/admin/advertised-apps/1",
                    body: #"{"AttributionWindows":{"global":{"install":{"view":"7"}}}}"#, token: admin,
                    expect: .ingest(400, "invalid-configuration")),
                Case(
                    name: "malformed property list", method: "PUT", path: "/v1/admin/advertised-apps/1",
                    body: "<plist><dict><key>x</dict>", token: admin, contentType: "application/x-plist",
                    expect: .ingest(400, "invalid-property-list")),
                Case(
                    name: "property list out of range", method: "PUT", path: "/v1/admin/advertised-apps/1",
                    body: plist(
                        "<key>AttributionWindows</key><dict><key>global</key><dict><key>install</key><dict><key>click</key><integer>31</integer></dict></dict></dict>"
                    ), token: admin, contentType: "application/xml", expect: .ingest(400, "value-out-of-range")),
                Case(
                    name: "item id 0", method: "PUT", path: "/v1/admin/advertised-apps/0", body: "{}", token: admin,
                    expect: .ingest(400, "invalid-item-identifier")),
                Case(
                    name: "item id not a number", method: "PUT", path: "/v1/admin/advertised-apps/abc", body: "{}", token: admin,
                    expect: .ingest(400, "invalid-item-identifier")),
                Case(
                    name: "key for an unregistered app", path: "/v1/admin/advertised-apps/999/keys", body: "{}", token: admin,
                    expect: .ingest(404, "unknown-advertised-app")),
                Case(name: "unknown route", path: "/v1/nowhere", body: "{}", expect: .ingest(404, "not-found")),
                // Signed but wrong: the verifier refuses, with the reason the network can look up.
                Case(
                    name: "alg none",
                    body: Self.impressionBody(
                        Self.jws(
                            header: #"{"alg":"none","kid":"\#(Self.network)"}"#, payload: Self.payload(), key: key,
                            signature: "AA")),
                    expect: .verifier(.unsupportedAlgorithm)),
                Case(
                    name: "HS256 keyed with the public key",
                    body: Self.impressionBody(
                        Self.jws(
                            header: #"{"alg":"HS256","kid":"\#(Self.network)"}"#, payload: Self.payload(), key: key,
                            signature: Base64URL.encode(
                                Data(
                                    HMACSHA256.authenticationCode(
                                        for: Array("x".utf8), key: Array(key.publicKey.derRepresentation)))))),
                    expect: .verifier(.unsupportedAlgorithm)),
                Case(
                    name: "RS256",
                    body: Self.impressionBody(
                        Self.jws(header: #"{"alg":"RS256","kid":"\#(Self.network)"}"#, payload: Self.payload(), key: key)),
                    expect: .verifier(.unsupportedAlgorithm)),
                Case(
                    name: "header not JSON", body: Self.impressionBody(Base64URL.encode(Data("nope".utf8)) + ".e30.AA"),
                    expect: .verifier(.invalidHeader)),
                Case(
                    name: "header with padding", body: Self.impressionBody(Base64URL.encode(Data(header.utf8)) + "==.e30.AA"),
                    expect: .verifier(.invalidHeader)),
                Case(
                    name: "header in standard base64 with +/", body: Self.impressionBody("eyJ+/.e30.AA"),
                    expect: .verifier(.invalidHeader)),
                Case(
                    name: "payload not base64", body: Self.impressionBody(Base64URL.encode(Data(header.utf8)) + ".!!!.AA"),
                    expect: .verifier(.invalidPayload)),
                Case(
                    name: "payload missing keys",
                    body: Self.impressionBody(
                        Self.jws(header: header, payload: #"{"ad-network-identifier":"\#(Self.network)"}"#, key: key)),
                    expect: .verifier(.invalidPayload)),
                Case(
                    name: "source id as a string",
                    body: Self.impressionBody(Self.jws(header: header, payload: Self.payload(source: #""1234""#), key: key)),
                    expect: .verifier(.invalidPayload)),
                Case(
                    name: "source id 10000",
                    body: Self.impressionBody(Self.jws(header: header, payload: Self.payload(source: "10000"), key: key)),
                    expect: .verifier(.invalidPayload)),
                Case(
                    name: "impression id not a UUID",
                    body: Self.impressionBody(Self.jws(header: header, payload: Self.payload(id: "not-a-uuid"), key: key)),
                    expect: .verifier(.invalidPayload)),
                Case(
                    name: "web impression type",
                    body: Self.impressionBody(Self.jws(header: header, payload: Self.payload(type: "web-impression"), key: key)),
                    expect: .verifier(.invalidPayload)),
                Case(
                    name: "signature not base64",
                    body: Self.impressionBody(Self.jws(header: header, payload: Self.payload(), key: key, signature: "%%%")),
                    expect: .verifier(.invalidSignature)),
                Case(
                    name: "signature truncated",
                    body: Self.impressionBody(String(Self.jws(header: header, payload: Self.payload(), key: key).dropLast(4))),
                    expect: .verifier(.invalidSignature)),
                Case(
                    name: "signature in DER",
                    body: Self.impressionBody(
                        Self.jws(
                            header: header, payload: Self.payload(), key: key,
                            signature: Base64URL.encode(try key.signature(for: Data("x".utf8)).derRepresentation))),
                    expect: .verifier(.invalidSignature)),
                Case(
                    name: "signed by another key",
                    body: Self.impressionBody(Self.jws(header: header, payload: Self.payload(), key: stranger)),
                    expect: .verifier(.invalidSignature)),
                Case(
                    name: "payload tampered after signing",
                    body: Self.impressionBody(
                        {
                            let parts = Self.jws(header: header, payload: Self.payload(source: "1"), key: key).split(
                                separator: ".")
                            return [String(parts[0]), Base64URL.encode(Data(Self.payload(source: "2").utf8)), String(parts[2])]
                                .joined(separator: ".")
                        }()), expect: .verifier(.invalidSignature)),
                Case(
                    name: "kid is another network",
                    body: Self.impressionBody(
                        Self.jws(header: #"{"alg":"ES256","kid":"unlisted.net"}"#, payload: Self.payload(), key: key)),
                    expect: .verifier(.keyIdentifierMismatch)),
                Case(
                    name: "kid with a Cyrillic letter",
                    body: Self.impressionBody(
                        Self.jws(
                            header: #"{"alg":"ES256","kid":"corpus.adattributionkit\u0430"}"#, payload: Self.payload(), key: key)
                    ), expect: .verifier(.keyIdentifierMismatch)),
                Case(
                    name: "unregistered network",
                    body: Self.impressionBody(
                        Self.jws(
                            header: #"{"alg":"ES256","kid":"ghost.net"}"#, payload: Self.payload(network: "ghost.net"), key: key)
                    ), expect: .verifier(.unknownAdNetwork)),
                Case(
                    name: "10 minutes in the future",
                    body: Self.impressionBody(Self.jws(header: header, payload: Self.payload(timestamp: t + 600_000), key: key)),
                    expect: .verifier(.impressionFromFuture)),
                Case(
                    name: "31 days old",
                    body: Self.impressionBody(
                        Self.jws(header: header, payload: Self.payload(timestamp: t - 31 * 86_400_000), key: key)),
                    expect: .verifier(.impressionExpired)),
                Case(
                    name: "click 16 minutes after load",
                    body: Self.impressionBody(
                        Self.jws(header: header, payload: Self.payload(), key: key),
                        interaction: #"{"type":"click","time":\#(t),"loaded-at":\#(t - 960_000)}"#),
                    expect: .verifier(.clickTooLate)),
                Case(
                    name: "view of 1.5 s",
                    body: Self.impressionBody(
                        Self.jws(header: header, payload: Self.payload(), key: key), interaction: view(t - 1_500, t)),
                    expect: .verifier(.viewTooShort)),
                Case(
                    name: "publisher does not list the network",
                    body: Self.impressionBody(
                        Self.jws(
                            header: #"{"alg":"ES256","kid":"unlisted.net"}"#, payload: Self.payload(network: "unlisted.net"),
                            key: key
                        )), expect: .verifier(.publisherNotListingNetwork)),
                Case(
                    name: "unregistered publisher app",
                    body: Self.impressionBody(Self.jws(header: header, payload: Self.payload(publisher: 31337), key: key)),
                    expect: .verifier(.publisherNotListingNetwork)),
                Case(
                    name: "unregistered advertised app",
                    body: Self.impressionBody(Self.jws(header: header, payload: Self.payload(app: 9_999_999), key: key)),
                    expect: .verifier(.unknownAdvertisedApp)),
                Case(
                    name: "old key after a rotation without grace",
                    body: Self.impressionBody(
                        Self.jws(
                            header: #"{"alg":"ES256","kid":"revoked.net"}"#,
                            payload: Self.payload(network: "revoked.net", publisher: Self.publisher + 1), key: key)),
                    expect: .verifier(.invalidSignature)),
                // SKAdNetwork 4.0 impressions compete in the same pool, checked against the network's SKAN key.
                Case(
                    name: "SKAN nonce in upper case", body: Self.skanBody(key: skanKey, nonce: UUID().uuidString),
                    expect: .ingest(400, "invalid-skadnetwork-impression")),
                Case(
                    name: "SKAN view-through reported as a click", body: Self.skanBody(key: skanKey, fidelity: 0),
                    expect: .ingest(400, "invalid-interaction")),
                // handleView() is AdAttributionKit's; a SKAdNetwork view has its start and end.
                Case(
                    name: "SKAN view without begin",
                    body: Self.skanBody(key: skanKey, fidelity: 0, interaction: #"{"type":"view","time":\#(Self.now())}"#),
                    expect: .ingest(400, "invalid-interaction")),
                Case(
                    name: "JWS and SKAN impression at once",
                    body:
                        #"{"device-identifier":"d","impression":"a.b.c","skadnetwork-impression":{},"interaction":{"type":"click","time":1,"loaded-at":1}}"#,
                    expect: .ingest(400, "invalid-json")),
                Case(
                    name: "neither JWS nor SKAN impression",
                    body: #"{"device-identifier":"d","interaction":{"type":"click","time":1,"loaded-at":1}}"#,
                    expect: .ingest(400, "invalid-components")),
                Case(
                    name: "SKAN impression tampered", body: Self.skanBody(key: skanKey, tamper: true),
                    expect: .verifier(.invalidSignature)),
                Case(
                    name: "SKAN impression signed with the JWS key", body: Self.skanBody(key: key),
                    expect: .verifier(.invalidSignature)),
                Case(
                    name: "SKAN impression of a network without a SKAN key",
                    body: Self.skanBody(network: "unlisted.net", key: skanKey), expect: .verifier(.unknownAdNetwork)),
                Case(name: "SKAN impression", body: Self.skanBody(key: skanKey), expect: .verified),
                Case(
                    name: "SKAN view-through",
                    body: Self.skanBody(key: skanKey, fidelity: 0, interaction: view(t - 60_000, t - 55_000)), expect: .verified),
                // Well-formed segments that decode to empty objects: ingest cannot tell, the verifier refuses.
                Case(name: "JWS of empty objects", body: Self.impressionBody("e30.e30.AAAA"), expect: .verifier(.invalidHeader)),
                // Accepted: what must keep working.
                Case(
                    name: "development impression (publisher 0, no publisher app registered)",
                    body: Self.impressionBody(Self.jws(header: header, payload: Self.payload(publisher: 0), key: key)),
                    expect: .verified),
                Case(
                    name: "valid impression", body: Self.impressionBody(Self.jws(header: header, payload: good, key: key)),
                    expect: .verified),
                Case(
                    name: "unknown extra payload fields",
                    body: Self.impressionBody(
                        Self.jws(header: header, payload: Self.payload(extra: #","future-field":true"#), key: key)),
                    expect: .verified
                ),
                Case(
                    name: "header escaping / in kid",
                    body: Self.impressionBody(
                        Self.jws(
                            header: #"{"alg":"ES256","kid":"corpus.adattributionkit","typ":"JWT\/x"}"#, payload: Self.payload(),
                            key: key)), expect: .verified),
                Case(
                    name: "old key within its grace period",
                    body: Self.impressionBody(
                        Self.jws(
                            header: #"{"alg":"ES256","kid":"rotated.net"}"#,
                            payload: Self.payload(network: "rotated.net", publisher: Self.publisher + 1), key: key)),
                    expect: .verified),
                Case(
                    name: "new key after a rotation",
                    body: Self.impressionBody(
                        Self.jws(
                            header: #"{"alg":"ES256","kid":"revoked.net"}"#,
                            payload: Self.payload(network: "revoked.net", publisher: Self.publisher + 1), key: newKey)),
                    expect: .verified),
                Case(
                    name: "first view",
                    body: Self.impressionBody(
                        Self.jws(header: header, payload: Self.payload(), key: key), device: viewDevice,
                        interaction: view(t - 10_000, t - 5_000)), expect: .verified),
                Case(
                    name: "property list configuration", method: "PUT", path: "/v1/admin/advertised-apps/5",
                    body: plist(
                        "<key>AttributionWindows</key><dict><key>global</key><dict><key>install</key><dict><key>click</key><integer>7</integer></dict></dict></dict><key>EligibleForAdAttributionKitOverlappingConversions</key><true/>"
                    ), token: admin, contentType: "application/x-plist", expect: .ingest(200, "")),
                // Idempotency records are per caller: an impression's is its network's (the `kid`), so
                // another network's impression for the same device under the same key is its own event
                // (it was answered 422 when impressions shared one scope).
                Case(
                    name: "impression with an Idempotency-Key",
                    body: Self.impressionBody(
                        Self.jws(header: header, payload: Self.payload(), key: key), device: "shared-key-device"),
                    idempotencyKey: "corpus-impression", expect: .verified),
                Case(
                    name: "another network's impression with the same Idempotency-Key and device",
                    body: Self.impressionBody(
                        Self.jws(
                            header: #"{"alg":"ES256","kid":"rotated.net"}"#,
                            payload: Self.payload(network: "rotated.net", publisher: Self.publisher + 1), key: key),
                        device: "shared-key-device"),
                    idempotencyKey: "corpus-impression", expect: .verified),
                Case(
                    name: "first use of an Idempotency-Key", path: "/v1/conversion-value-updates",
                    body: update(#""fineConversionValue":1"#), token: appKey, idempotencyKey: "corpus-1", expect: .ingest(202, "")
                ),
                Case(
                    name: "retry with the same Idempotency-Key and body", path: "/v1/conversion-value-updates",
                    body: update(#""fineConversionValue":1"#), token: appKey, idempotencyKey: "corpus-1", expect: .ingest(202, "")
                ),
                Case(
                    name: "Idempotency-Key reused with another body", path: "/v1/conversion-value-updates",
                    body: update(#""fineConversionValue":2"#), token: appKey, idempotencyKey: "corpus-1",
                    expect: .ingest(422, "idempotency-key-reused")),
                Case(
                    name: "another app's request with the same Idempotency-Key", path: "/v1/conversion-value-updates",
                    body: update(#""fineConversionValue":2"#).replacingOccurrences(of: "\(Self.app)", with: "\(Self.otherApp)"),
                    token: otherKey, idempotencyKey: "corpus-1", expect: .ingest(202, "")),
                // Order-dependent refusals: after the accepted ones above.
                // The replay comes from a device in another partition: the replay marker is the impression's,
                // not the device's, so partitioning by device does not let it through.
                Case(
                    name: "replayed impression",
                    body: Self.impressionBody(
                        Self.jws(header: header, payload: replayed, key: key), device: Self.replayDevices.0),
                    expect: .verified),
                Case(
                    name: "replayed impression, second time, from a device in another partition",
                    body: Self.impressionBody(
                        Self.jws(header: header, payload: replayed, key: key), device: Self.replayDevices.1),
                    expect: .verifier(.impressionReplayed)),
                Case(
                    name: "overlapping view of the same network",
                    body: Self.impressionBody(
                        Self.jws(header: header, payload: Self.payload(), key: key), device: viewDevice,
                        interaction: view(t - 7_000, t - 3_000)), expect: .verifier(.overlappingView)),
            ]
            cases += Self.destinationCases(publicKeyPEM: key.publicKey.pemRepresentation, admin: admin)
            #expect(cases.count >= 50)

            let connection = redis.connect()
            var pendingVerifier: [(Case, String)] = []
            var verifiedIDs: [(Case, String)] = []
            var idempotentIDs: [String: String] = [:]
            for c in cases {
                // The admin API is on its own listener.
                let base = c.path.hasPrefix("/v1/admin/") ? pipeline.adminURL : pipeline.ingestURL
                var request = HTTPClientRequestBuilder(method: c.method, url: base + c.path, body: c.body)
                request.token = c.token
                request.contentType = c.contentType ?? "application/json"
                request.idempotencyKey = c.idempotencyKey
                let reply = try await http.send(request)
                #expect(reply.status < 500, "\(c.name): never a 5xx")
                switch c.expect {
                case .ingest(let status, let reason):
                    #expect(reply.status == status, "\(c.name): \(String(decoding: reply.body, as: UTF8.self))")
                    if !reason.isEmpty {
                        #expect(reply.contentType == "application/problem+json", "\(c.name)")
                        #expect(
                            reply.json["reason"] as? String == reason, "\(c.name): \(String(decoding: reply.body, as: UTF8.self))"
                        )
                    }
                    if c.idempotencyKey != nil, reply.status == 202, let id = reply.json["event-identifier"] as? String {
                        idempotentIDs[c.name] = id
                    }
                case .verifier, .verified:
                    #expect(reply.status == 202, "\(c.name): \(String(decoding: reply.body, as: UTF8.self))")
                    let id = try #require(reply.json["event-identifier"] as? String, "\(c.name)")
                    if case .verified = c.expect { verifiedIDs.append((c, id)) } else { pendingVerifier.append((c, id)) }
                }
                // Order matters for replays and overlapping views: let the verifier see each in turn.
                if c.name.hasPrefix("replayed") || c.name.contains("view") {
                    _ = try await eventually(timeout: .seconds(5)) {
                        try await streamLength(StreamNames.events, on: connection) > 0
                    }
                    try await Task.sleep(for: .milliseconds(150))
                }
            }
            let first = idempotentIDs["first use of an Idempotency-Key"]
            #expect(
                first != nil && idempotentIDs["retry with the same Idempotency-Key and body"] == first,
                "a retry gets the first answer")
            #expect(
                idempotentIDs["another app's request with the same Idempotency-Key"].map { $0 != first } == true,
                "idempotency keys are per caller: another app's request is its own event")

            // Every verifier case reaches its verdict.
            let expectedVerdicts = pendingVerifier.count + verifiedIDs.count
            let settled = try await eventually(timeout: .seconds(20), every: .milliseconds(100)) {
                let rejected = try await streamLength(StreamNames.rejected, on: connection)
                let verified = try await streamLength(StreamNames.verified, on: connection)
                return rejected + verified >= expectedVerdicts + 2  // + the two idempotent updates
            }
            #expect(settled, "\(pipeline.logs())")
            var reasons: [String: RejectionReason] = [:]
            for record in try await streamRecords(StreamNames.rejected, on: connection) {
                if case .rejected(let rejection) = try Envelope.decode(Array(try #require(record.message).utf8)).body {
                    reasons[rejection.eventIdentifier] = rejection.reason
                }
            }
            var verified = Set<String>()
            for record in try await streamRecords(StreamNames.verified, on: connection) {
                verified.insert(try Envelope.decode(Array(try #require(record.message).utf8)).id)
            }
            for (c, id) in pendingVerifier {
                guard case .verifier(let reason) = c.expect else { continue }
                #expect(reasons[id] == reason, "\(c.name): refused as \(reasons[id]?.rawValue ?? "nothing")")
            }
            for (c, id) in verifiedIDs {
                #expect(verified.contains(id), "\(c.name): verified (refused as \(reasons[id]?.rawValue ?? "-"))")
            }

            // An ad network can look up why: its refusals, newest first.
            let listed = try await http.send(
                "GET", "\(pipeline.adminURL)/v1/admin/ad-networks/\(Self.network)/rejections", token: admin)
            let rejections = try #require(listed.json["rejections"] as? [[String: Any]])
            let unsigned = try #require(listed.json["unsigned-rejections"] as? [[String: Any]])
            #expect(rejections.count >= 3 && unsigned.count >= 5, "\(rejections.count) signed, \(unsigned.count) unsigned")
            #expect((rejections + unsigned).allSatisfy { $0["ad-network-identifier"] as? String == Self.network })
            // Only refusals of impressions the network signed are in its own list: anyone can name it on a
            // forged one, and a flood of those must not push its own refusals out.
            let beforeSignature: Set<String> = [
                RejectionReason.invalidSignature.rawValue, RejectionReason.unsupportedAlgorithm.rawValue,
                RejectionReason.invalidHeader.rawValue,
            ]
            #expect(!rejections.contains { beforeSignature.contains($0["reason"] as? String ?? "") })
            // Refused before its payload was read: listed, apart, by the header's kid.
            #expect(
                unsigned.contains { $0["reason"] as? String == RejectionReason.unsupportedAlgorithm.rawValue },
                "an HS256 impression naming the network is in its unsigned list")
            #expect((listed.json["unsigned-refusals"] as? Int ?? 0) >= unsigned.count)
            #expect(
                try await streamLength(ConsumerGroups.verifier.deadLetterStream, on: connection) == 0,
                "no message broke the verifier")

            // Refusals are counted per reason on the verifier's /metrics.
            let verifier = try #require(pipeline.url(of: "verifier"))
            let metrics = String(decoding: try await http.send("GET", "\(verifier)/metrics").body, as: UTF8.self)
            for reason in [RejectionReason.invalidSignature, .unsupportedAlgorithm, .impressionReplayed, .overlappingView] {
                #expect(metrics.contains(#"verifier_rejections_total{reason="\#(reason.rawValue)"}"#), "\(reason) counted")
            }
        }
    }
}

func jsonString(_ text: String) -> String {
    String(decoding: try! JSONSerialization.data(withJSONObject: [text]), as: UTF8.self).dropFirst().dropLast().description
}
