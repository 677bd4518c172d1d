import AttributionCrypto
import AttributionModel
import Foundation
import RedisStreams
import ServiceRuntime
import TestSupport
import Testing

extension PipelineSuites {
    /// Test postbacks through a running pipeline: an ad network asks with its own credential (an operator
    /// with the admin token), and its receiver gets each tier's field set at once, signed with the
    /// test key and verifiable against the JWKS; nothing of it reaches a crowd or a device's state.
    @Suite("Test postbacks for ad networks", .serialized)
    struct TestPostbackTests {
        let http = HTTPTestClient()
        static let publisher: ItemIdentifier = 5_838_492

        /// What a choice of tier must put in a postback, from the spec's field table (section 5), written
        /// out rather than computed by the code under test.
        struct Expected: Equatable, CustomStringConvertible {
            var sourceIdentifier: String
            var payloadKeys: Set<String>
            var bodyKeys: Set<String>
            var description: String { "source \(sourceIdentifier), payload \(payloadKeys.sorted()), body \(bodyKeys.sorted())" }
        }

        static let alwaysInPayload: Set<String> = [
            "impression-type", "ad-network-identifier", "source-identifier", "advertised-item-identifier",
            "conversion-type", "postback-identifier", "postback-sequence-index", "did-win",
        ]

        static func expected(tier: Int, window: Int, didWin: Bool) -> Expected {
            let marketplace: Set<String> = tier > 0 ? ["marketplace-identifier"] : []
            if !didWin {
                return Expected(
                    sourceIdentifier: "34", payloadKeys: alwaysInPayload.union(marketplace),
                    bodyKeys: tier > 0
                        ? ["jws-string", "ad-interaction-type", "coarse-conversion-value"]
                        : ["jws-string", "ad-interaction-type"])
            }
            if window > 0 {
                return Expected(
                    sourceIdentifier: "34", payloadKeys: alwaysInPayload.union(marketplace),
                    bodyKeys: ["jws-string", "ad-interaction-type", "coarse-conversion-value"])
            }
            switch tier {
            case 0:
                return Expected(
                    sourceIdentifier: "34", payloadKeys: alwaysInPayload, bodyKeys: ["jws-string", "ad-interaction-type"])
            case 1:
                return Expected(
                    sourceIdentifier: "34", payloadKeys: alwaysInPayload.union(marketplace),
                    bodyKeys: ["jws-string", "ad-interaction-type", "coarse-conversion-value"])
            case 2:
                return Expected(
                    sourceIdentifier: "1234", payloadKeys: alwaysInPayload.union(marketplace),
                    bodyKeys: ["jws-string", "ad-interaction-type", "conversion-value"])
            default:
                return Expected(
                    sourceIdentifier: "1234",
                    payloadKeys: alwaysInPayload.union(marketplace).union(["publisher-item-identifier"]),
                    bodyKeys: ["jws-string", "ad-interaction-type", "conversion-value", "country-code"])
            }
        }

        @Test func eachTiersFieldSetReachesTheReceiverSignedWithTheTestKey() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            let processes = try PipelineProcesses(
                redis: redis, timeScale: 172_800, extraEnvironment: ["TIMER_POLL_MS": "10"], inProcess: true)
            defer { processes.stop() }
            try #require(try await http.waitUntilUp("\(processes.ingestURL)/health"), "ingest starts\n\(processes.logs())")
            try #require(try await http.waitUntilUp("\(processes.receiverURL)/health"), "receiver starts")
            let network = "tester.adattributionkit"
            let app: ItemIdentifier = 1_300_000_001
            try await processes.registerCampaign(
                network: network, publicKeyPEM: SigningKey.generate().publicKey.pemRepresentation, publisher: Self.publisher,
                app: app, http: http)
            let issued = try await http.send(
                "POST", "\(processes.adminURL)/v1/admin/ad-networks/\(network)/credentials", token: processes.adminToken)
            let credential = try #require(issued.json["credential"] as? String)
            let route = "\(processes.ingestURL)/v1/ad-networks/\(network)/test-postbacks"
            func choices(tier: Int, didWin: Bool = true) -> [String: Any] {
                [
                    "tier": tier, "windows": 3, "ad-interaction-type": "view", "conversion-value": 42,
                    "coarse-conversion-value": "high", "country-code": "DE", "did-win": didWin,
                    "advertised-item-identifier": app, "publisher-item-identifier": Self.publisher, "source-identifier": 1234,
                ]
            }

            // Each tier, three windows each (tier 0 and a non-winner get the first window's only).
            var asked: [String: (tier: Int, didWin: Bool)] = [:]
            for (tier, didWin) in [(0, true), (1, true), (2, true), (3, true), (3, false)] {
                let reply = try await http.send("POST", route, json: choices(tier: tier, didWin: didWin), token: credential)
                try #require(reply.status == 202, "\(String(decoding: reply.body, as: UTF8.self))")
                let ids = try #require(reply.json["postback-identifiers"] as? [String])
                #expect(ids.count == (tier == 0 || !didWin ? 1 : 3), "tier \(tier), did-win \(didWin): \(ids)")
                for id in ids { asked[id] = (tier, didWin) }
            }
            // The admin token works too, on the admin listener.
            let byOperator = try await http.send(
                "POST", "\(processes.adminURL)/v1/admin/ad-networks/\(network)/test-postbacks",
                json: ["tier": 1, "advertised-item-identifier": app, "coarse-conversion-value": "low"],
                token: processes.adminToken)
            try #require(byOperator.status == 202, "\(String(decoding: byOperator.body, as: UTF8.self))")
            for id in try #require(byOperator.json["postback-identifiers"] as? [String]) { asked[id] = (1, true) }

            let arrived = try await eventually(timeout: .seconds(20), every: .milliseconds(100)) {
                processes.receivedPostbacks().count >= asked.count
            }
            try #require(arrived, "\(processes.receivedPostbacks().count) of \(asked.count) arrived\n\(processes.logs())")
            let received = processes.receivedPostbacks()
            #expect(received.count == asked.count)
            for postback in received {
                let payload = try #require(postback["payload"] as? [String: Any])
                let body = try #require(postback["body"] as? [String: Any])
                let id = try #require(payload["postback-identifier"] as? String)
                let (tier, didWin) = try #require(asked[id], "a postback nobody asked for: \(id)")
                let window = try #require(payload["postback-sequence-index"] as? Int)
                let want = Self.expected(tier: tier, window: window, didWin: didWin)
                let got = Expected(
                    sourceIdentifier: payload["source-identifier"] as? String ?? "-", payloadKeys: Set(payload.keys),
                    bodyKeys: Set(body.keys))
                #expect(got == want, "tier \(tier), window \(window), did-win \(didWin)")
                #expect(payload["did-win"] as? Bool == didWin)
                if want.bodyKeys.contains("country-code") { #expect(body["country-code"] as? String == "DE") }
                if want.bodyKeys.contains("conversion-value") { #expect(body["conversion-value"] as? Int == 42) }
            }
            // Every one verifies against the published JWKS, under the test key's kid: the JWKS has three
            // roles, and a receiver tells a test postback by its kid alone.
            let jwks = try await http.send("GET", "\(processes.ingestURL)/.well-known/jwks.json").body
            let kids = try DeliveryTests.verifyInPython(
                jwks: jwks, bodies: try JSONSerialization.data(withJSONObject: received.compactMap { $0["body"] }))
            // DEVELOPMENT_MODE generates the keys, so each kid carries a suffix.
            #expect(kids.count == received.count && Set(kids).count == 1, "\(kids)")
            let testKid = try #require(kids.first)
            #expect(testKid.hasPrefix("attribution-pipeline-test/0-"), "\(testKid)")
            let published = try JSONDecoder().decode(JWKSet.self, from: jwks)
            let publishedKids = published.keys.compactMap(\.kid)
            #expect(publishedKids.count == 3, "\(publishedKids)")
            #expect(publishedKids.contains(processes.signingKeyID) && publishedKids.contains(testKid), "\(publishedKids)")
            #expect(publishedKids.contains { $0.hasPrefix("attribution-pipeline-development/0-") }, "\(publishedKids)")
            // Only the third key verifies them: the production and development keys, even listed under the
            // test kid, do not.
            for other in published.keys where other.kid != testKid {
                var impostor = other
                impostor.kid = testKid
                for postback in received {
                    let body = try JSONSerialization.data(withJSONObject: try #require(postback["body"]))
                    #expect(throws: JWSError.self) { try PostbackVerifier.verify(body: body, keys: JWKSet(keys: [impostor])) }
                }
            }

            // No crowd counted, no device state, no plan: only the streams moved.
            let connection = redis.connect()
            let keys = try await connection.send(RedisCommand("KEYS", "*")).elements.compactMap(\.string)
            #expect(
                keys.filter { $0.hasPrefix("scheduler:crowd") || $0.hasPrefix("winner:state") || $0.contains(":plan:") }.isEmpty,
                "\(keys)")
            await connection.close()
        }

        @Test func refusalsAndTheRateLimit() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            let processes = try PipelineProcesses(redis: redis, timeScale: 172_800, inProcess: true)
            defer { processes.stop() }
            try #require(try await http.waitUntilUp("\(processes.ingestURL)/health"), "ingest starts\n\(processes.logs())")
            let app: ItemIdentifier = 1_300_000_002
            for network in ["first.adattributionkit", "second.adattributionkit"] {
                try await processes.registerCampaign(
                    network: network, publicKeyPEM: SigningKey.generate().publicKey.pemRepresentation,
                    publisher: Self.publisher, app: app, http: http)
            }
            let issued = try await http.send(
                "POST", "\(processes.adminURL)/v1/admin/ad-networks/first.adattributionkit/credentials",
                token: processes.adminToken)
            let credential = try #require(issued.json["credential"] as? String)
            let route = "\(processes.ingestURL)/v1/ad-networks/first.adattributionkit/test-postbacks"
            let fine: [String: Any] = ["tier": 2, "advertised-item-identifier": app]
            for (json, token, status, reason) in [
                (fine, nil, 401, "unauthorized"),
                (fine, "not-a-credential", 401, "unauthorized"),
                (["tier": 4, "advertised-item-identifier": app], credential, 400, "value-out-of-range"),
                (["tier": 1, "windows": 2, "advertised-item-identifier": app], credential, 400, "value-out-of-range"),
                (["tier": 1, "teir": 2, "advertised-item-identifier": app], credential, 400, "unknown-key"),
                (["tier": 1, "advertised-item-identifier": app, "postback-identifiers": ["x"]], credential, 400, "unknown-key"),
                (["tier": 1], credential, 400, "invalid-json"),
                (
                    ["tier": 1, "advertised-item-identifier": app, "conversion-tag": "0f8fad5b-d9cb-469f-a165-70867728950e"],
                    credential, 400, "conversion-tag-not-supported"
                ),
                (
                    ["tier": 1, "advertised-item-identifier": app, "conversion-type": "re-engagement", "conversion-tag": "x"],
                    credential, 400, "invalid-conversion-tag"
                ),
                (["tier": 3, "advertised-item-identifier": app, "country-code": "ZZ"], credential, 400, "invalid-country-code"),
                (
                    ["tier": 1, "advertised-item-identifier": app, "ad-network-identifier": "second.adattributionkit"],
                    credential, 400, "invalid-body"
                ),
            ] as [([String: Any], String?, Int, String)] {
                let reply = try await http.send("POST", route, json: json, token: token)
                #expect(
                    reply.status == status && reply.json["reason"] as? String == reason,
                    "\(json): \(String(decoding: reply.body, as: UTF8.self))")
            }
            // Another network's credential: 403.
            let other = try await http.send(
                "POST", "\(processes.ingestURL)/v1/ad-networks/second.adattributionkit/test-postbacks", json: fine,
                token: credential)
            #expect(other.status == 403 && other.json["reason"] as? String == "credential-mismatch")

            // Ten a minute per network, then 429 with Retry-After; the other network is not held back.
            for index in 1...TestPostbackLimit.perMinute {
                let reply = try await http.send("POST", route, json: fine, token: credential)
                #expect(reply.status == 202, "request \(index): \(String(decoding: reply.body, as: UTF8.self))")
            }
            let limited = try await http.send("POST", route, json: fine, token: credential)
            #expect(limited.status == 429 && limited.json["reason"] as? String == "rate-limited")
            #expect(Int(limited.retryAfter ?? "") ?? 0 >= 1, "Retry-After: \(limited.retryAfter ?? "none")")
            let second = try await http.send(
                "POST", "\(processes.adminURL)/v1/admin/ad-networks/second.adattributionkit/test-postbacks", json: fine,
                token: processes.adminToken)
            #expect(second.status == 202)
        }
    }

    /// The documented limit, stated here so that a change to it must change a test.
    enum TestPostbackLimit {
        static let perMinute = 10
    }
}
