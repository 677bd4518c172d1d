import AttributionCrypto
import AttributionModel
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceRuntime
import TestSupport
import Testing

extension PipelineSuites {
    /// The whole path as real processes over real HTTP and a real Redis: admin registration, an impression
    /// with a click, an install, a locked value update, and the signed postbacks at the receiver.
    @Suite("End to end: five services and the receiver", .serialized)
    struct EndToEndTests {
        static let advertisedApp: ItemIdentifier = 1_108_187_390
        static let publisherApp: ItemIdentifier = 5_838_492
        let http = HTTPTestClient()

        struct Network {
            let id: String
            let key = SigningKey.generate()
        }

        func register(_ network: Network, on pipeline: PipelineProcesses) async throws {
            let reply = try await http.send(
                "PUT", "\(pipeline.adminURL)/v1/admin/ad-networks/\(network.id)",
                json: [
                    "public-key": network.key.publicKey.pemRepresentation, "postback-url": "\(pipeline.receiverURL)/postbacks",
                ],
                token: pipeline.adminToken)
            #expect(reply.status == 200, "register \(network.id): \(String(decoding: reply.body, as: UTF8.self))")
        }

        func impression(_ network: Network, id: String, source: Int, at time: Milliseconds) throws -> String {
            let payload = ImpressionPayload(
                impressionIdentifier: id, adNetworkIdentifier: AdNetworkIdentifier(network.id)!,
                advertisedItemIdentifier: Self.advertisedApp, publisherItemIdentifier: Self.publisherApp,
                sourceIdentifier: source,
                timestamp: time)
            return try CompactJWS.sign(payload: JSONCoding.encoder.encode(payload), keyID: network.id, with: network.key)
        }

        static func now() -> Milliseconds { Milliseconds(Date().timeIntervalSince1970 * 1000) }

        /// On one Redis (with AOF), on a real local Redis Cluster, and on one Redis over TLS only (mutual TLS,
        /// each service its own ACL user).
        @Test(arguments: TestRedisKind.allCases)
        func happyPathDeliversSignedPostbacksForEveryWindow(on redisKind: TestRedisKind) async throws {
            let redis = try await redisKind.start(appendOnly: true)
            defer { redis.stop() }
            // A day lasts half a second; tier thresholds of 1 let one conversion reach tier 3 (all fields).
            let scale = 172_800.0
            let pipeline = try PipelineProcesses(
                redis: redis, timeScale: scale, extraEnvironment: ["CROWD_TIER_THRESHOLDS": "1,1,1"], inProcess: true)
            defer { pipeline.stop() }
            #expect(try await http.waitUntilUp("\(pipeline.ingestURL)/health"), "ingest starts\n\(pipeline.logs())")
            #expect(try await http.waitUntilUp("\(pipeline.receiverURL)/health"), "receiver starts\n\(pipeline.logs())")

            // Admin: two ad networks, a publisher app listing both, the advertised app.
            let winner = Network(id: "winner.adattributionkit")
            let other = Network(id: "other.skadnetwork")
            try await register(winner, on: pipeline)
            try await register(other, on: pipeline)
            let publisher = try await http.send(
                "PUT", "\(pipeline.adminURL)/v1/admin/publisher-apps/\(Self.publisherApp)",
                json: ["AdNetworkIdentifiers": [winner.id, other.id]], token: pipeline.adminToken)
            #expect(publisher.status == 200)
            // A 7-day view window (3.5 s at this scale) through the app's own configuration.
            let advertised = try await http.send(
                "PUT", "\(pipeline.adminURL)/v1/admin/advertised-apps/\(Self.advertisedApp)",
                json: ["AttributionWindows": ["global": ["install": ["view": 7]]]], token: pipeline.adminToken)
            #expect(advertised.status == 200)
            let appKey = try #require(
                try await http.send(
                    "POST", "\(pipeline.adminURL)/v1/admin/advertised-apps/\(Self.advertisedApp)/keys",
                    token: pipeline.adminToken
                ).json["app-key"] as? String)

            // The device: a view from one network, a click from the other (click beats view), an install, a locked update.
            let device = "device-\(UUID().uuidString)"
            let t0 = Self.now()
            let view = try await http.send(
                "POST", "\(pipeline.ingestURL)/v1/impressions",
                json: [
                    "device-identifier": device,
                    "impression": try impression(other, id: UUID().uuidString, source: 1234, at: t0 - 5_000),
                    "interaction": ["type": "view", "begin": t0 - 4_000, "time": t0 - 1_000],
                ])
            #expect(view.status == 202, "\(String(decoding: view.body, as: UTF8.self))")
            let click = try await http.send(
                "POST", "\(pipeline.ingestURL)/v1/impressions",
                json: [
                    "device-identifier": device,
                    "impression": try impression(winner, id: UUID().uuidString, source: 5239, at: t0 - 3_000),
                    "interaction": ["type": "click", "loaded-at": t0 - 3_000, "time": t0 - 2_000],
                ])
            #expect(click.status == 202)
            // Let the impressions reach attribution-winner before the install (arrival order is the device's).
            try await Task.sleep(for: .milliseconds(300))
            let installAt = Self.now()
            let install = try await http.send(
                "POST", "\(pipeline.ingestURL)/v1/conversions",
                json: [
                    "device-identifier": device, "advertised-item-identifier": Self.advertisedApp, "conversion-type": "download",
                    "time": installAt, "country-code": "US",
                ], token: appKey)
            #expect(install.status == 202)
            let lockAt = installAt + 10
            let update = try await http.send(
                "POST", "\(pipeline.ingestURL)/v1/conversion-value-updates",
                json: [
                    "device-identifier": device, "advertised-item-identifier": Self.advertisedApp, "time": lockAt,
                    "fineConversionValue": 42, "coarseConversionValue": "high", "lockPostback": true,
                ], token: appKey)
            #expect(update.status == 202)
            // A window sends a postback only if the app reports a value in it: one update in window 1
            // (days 3–7) and one in window 2 (days 8–35), each with its own coarse value.
            let day = Milliseconds(86_400_000 / scale)
            for (days, coarse) in [(Milliseconds(4), "medium"), (10, "low")] {
                let at = installAt + days * day
                if at > Self.now() { try await Task.sleep(for: .milliseconds(at - Self.now())) }
                let later = try await http.send(
                    "POST", "\(pipeline.ingestURL)/v1/conversion-value-updates",
                    json: [
                        "device-identifier": device, "advertised-item-identifier": Self.advertisedApp, "time": Self.now(),
                        "fineConversionValue": 50, "coarseConversionValue": coarse,
                    ], token: appKey)
                #expect(later.status == 202)
            }

            // Window 0 (locked): winner + non-winner. Windows 1 and 2 end at 7 and 35 days (3.5 s, 17.5 s) and
            // send the winner coarse-only postbacks after 24–144 h (0.5–3 s).
            let arrived = try await eventually(timeout: .seconds(40), every: .milliseconds(200)) {
                pipeline.receivedPostbacks().count >= 4
            }
            let received = pipeline.receivedPostbacks()
            try #require(arrived, "4 postbacks arrive, got \(received.count)\n\(pipeline.logs())")
            try await Task.sleep(for: .seconds(1))  // nothing more should come
            #expect(pipeline.receivedPostbacks().count == 4)

            // Once its last postback is released, the plan (kept until then for late updates) expires and
            // leaves only its marker.
            let connection = redis.connect(label: "test.end-to-end")
            // Both in the device's partition (SCAN with the partition's tag goes to its node).
            let tag = testPartitioning.of(device: device).tag
            func values(_ pattern: String) async throws -> [String?] {
                let scan = try await connection.send(RedisCommand("SCAN", "0", "MATCH", pattern, "COUNT", "10000"))
                let keys = (scan.elements.dropFirst().first?.elements ?? []).compactMap(\.string)
                return try await connection.pipeline(keys.map { RedisCommand("GET", $0) }).map(\.string)
            }
            let marked = try await eventually(timeout: .seconds(10), every: .milliseconds(100)) {
                let plans = try await values("scheduler:plan:\(tag):*")
                let markers = try await values("scheduler:finished:\(tag):*")
                return plans.isEmpty && markers == ["finished"]
            }
            #expect(marked, "the finished plan becomes its marker\n\(pipeline.logs())")

            // An update after the last window reaches a finished plan: acknowledged and ignored, never
            // retried or dead-lettered.
            let late = try await http.send(
                "POST", "\(pipeline.ingestURL)/v1/conversion-value-updates",
                json: [
                    "device-identifier": device, "advertised-item-identifier": Self.advertisedApp, "time": Self.now(),
                    "fineConversionValue": 1,
                ], token: appKey)
            #expect(late.status == 202)
            let lateHandled = try await eventually(timeout: .seconds(10)) {
                let routed = try await streamRecords(StreamNames.attributions, on: connection).filter {
                    $0.message?.contains("update.attributed") == true
                }
                let pending = try await pendingCount(StreamNames.attributions, group: "scheduler", on: connection)
                return routed.count == 4 && pending == 0  // the lock, one per later window, and this one
            }
            #expect(lateHandled, "the late update was routed and acknowledged\n\(pipeline.logs())")
            #expect(try await streamLength(ConsumerGroups.scheduler.deadLetterStream, on: connection) == 0)
            #expect(pipeline.receivedPostbacks().count == 4)

            // The status view: nothing waiting in any partition; on a cluster, every node healthy and
            // every partition served by exactly one primary.
            let snapshot = try await PipelineSnapshot.read(on: connection, testPartitioning, at: WallClock.nowMilliseconds())
            #expect(snapshot.groups.allSatisfy { $0.partitionLag.count == testPartitioning.count })
            #expect(snapshot.groups.first { $0.group == "verifier" }?.lag == 0, "every event read")
            if redis.cluster {
                #expect(snapshot.nodes.count == 6 && snapshot.nodes.allSatisfy { $0.health == "ok" }, "\(snapshot.nodes)")
                let served = snapshot.nodes.filter { $0.role == "primary" }.flatMap(\.partitions)
                #expect(served.sorted() == Array(0..<testPartitioning.count), "\(snapshot.nodes)")
                // Tags spread the partitions over the slots: equal slot ranges serve 16 / 3 partitions each, give or take one.
                #expect(snapshot.nodes.filter { $0.role == "primary" }.allSatisfy { (4...6).contains($0.partitions.count) })
            } else {
                #expect(snapshot.nodes.isEmpty)
            }

            // Every body verifies against the JWKS ingest publishes, with the dispatcher's key id.
            let jwks = try await http.send("GET", "\(pipeline.ingestURL)/.well-known/jwks.json")
            let keys = try JSONDecoder().decode(JWKSet.self, from: jwks.body)
            #expect(keys.key(withID: pipeline.signingKeyID) != nil)
            var verified: [VerifiedPostback] = []
            for line in received {
                let body = try JSONSerialization.data(withJSONObject: try #require(line["body"]))
                verified.append(try PostbackVerifier.verifyAny(body: body, keys: keys))
                #expect(!String(decoding: body, as: UTF8.self).contains(device), "no device identifier leaves the pipeline")
            }
            #expect(verified.allSatisfy { $0.keyID == pipeline.signingKeyID })
            #expect(Set(verified.map(\.payload.postbackIdentifier)).count == 4)

            let first = try #require(verified.first { $0.payload.didWin && $0.payload.postbackSequenceIndex == 0 })
            #expect(first.payload.adNetworkIdentifier.rawValue == winner.id)
            #expect(first.payload.impressionType == "app-impression")
            #expect(first.payload.sourceIdentifier == "5239")
            #expect(first.payload.advertisedItemIdentifier == Self.advertisedApp)
            #expect(first.payload.publisherItemIdentifier == Self.publisherApp)
            #expect(first.payload.conversionType == .download)
            #expect(first.payload.marketplaceIdentifier == "com.apple.AppStore")
            #expect(first.body.adInteractionType == .click)
            #expect(first.body.conversionValue == 42)
            #expect(first.body.coarseConversionValue == nil)
            #expect(first.body.countryCode == "US")

            let losing = try #require(verified.first { !$0.payload.didWin })
            #expect(losing.payload.adNetworkIdentifier.rawValue == other.id)
            #expect(losing.payload.postbackSequenceIndex == 0)
            #expect(losing.payload.sourceIdentifier == "34")
            #expect(losing.payload.publisherItemIdentifier == nil)
            #expect(losing.body.adInteractionType == .view)
            #expect(losing.body.conversionValue == nil)

            let later = verified.filter { $0.payload.postbackSequenceIndex > 0 }.sorted {
                $0.payload.postbackSequenceIndex < $1.payload.postbackSequenceIndex
            }
            #expect(later.map(\.payload.postbackSequenceIndex) == [1, 2])
            // Each later window carries its own window's coarse value only.
            #expect(later.map(\.body.coarseConversionValue) == [.medium, .low])
            for postback in later {
                #expect(postback.payload.didWin)
                #expect(postback.payload.sourceIdentifier == "39")
                #expect(postback.body.conversionValue == nil)
                #expect(postback.payload.publisherItemIdentifier == nil)
            }

            // The first postback was held 24–48 h (scaled) after the lock; allow for processing and polling.
            let firstLine = try #require(
                received.first {
                    ($0["payload"] as? [String: Any])?["postback-identifier"] as? String == first.payload.postbackIdentifier
                })
            let receivedAt = try #require(
                firstLine["received-at"] as? Int64 ?? (firstLine["received-at"] as? Int).map(Int64.init))
            #expect(receivedAt - lockAt >= day, "held at least 24 h")
            #expect(receivedAt - lockAt <= 2 * day + 1_500, "sent within 48 h (plus processing)")
        }

        /// The scheduler's crowd counters decide tiers: with tier 1 at 3 conversions, the first two
        /// conversions of a crowd are tier 0 (no value) and the next two tier 1 (coarse value).
        @Test func crowdCountsDecideTheTier() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            let pipeline = try PipelineProcesses(
                redis: redis, timeScale: 172_800, extraEnvironment: ["CROWD_TIER_THRESHOLDS": "3,1000000,1000000"],
                inProcess: true)
            defer { pipeline.stop() }
            #expect(try await http.waitUntilUp("\(pipeline.ingestURL)/health"), "ingest starts\n\(pipeline.logs())")
            #expect(try await http.waitUntilUp("\(pipeline.receiverURL)/health"), "receiver starts\n\(pipeline.logs())")
            let network = Network(id: "crowd.adattributionkit")
            let appKey = try await pipeline.registerCampaign(
                network: network.id, publicKeyPEM: network.key.publicKey.pemRepresentation, publisher: Self.publisherApp,
                app: Self.advertisedApp, http: http)
            for device in (1...4).map({ "crowd-device-\($0)" }) {
                let t0 = Self.now()
                let click = try await http.send(
                    "POST", "\(pipeline.ingestURL)/v1/impressions",
                    json: [
                        "device-identifier": device,
                        "impression": try impression(network, id: UUID().uuidString, source: 5239, at: t0 - 3_000),
                        "interaction": ["type": "click", "loaded-at": t0 - 3_000, "time": t0 - 2_000],
                    ])
                #expect(click.status == 202)
                try await Task.sleep(for: .milliseconds(100))
                for (path, json) in [
                    ("conversions", ["conversion-type": "download", "time": t0, "country-code": "US"] as [String: Any]),
                    (
                        "conversion-value-updates",
                        ["time": t0 + 10, "fineConversionValue": 42, "coarseConversionValue": "high", "lockPostback": true]
                    ),
                ] {
                    let reply = try await http.send(
                        "POST", "\(pipeline.ingestURL)/v1/\(path)",
                        json: json.merging(["device-identifier": device, "advertised-item-identifier": Self.advertisedApp]) {
                            a, _ in
                            a
                        },
                        token: appKey)
                    #expect(reply.status == 202)
                }
            }
            let arrived = try await eventually(timeout: .seconds(20), every: .milliseconds(200)) {
                pipeline.receivedPostbacks().filter { ($0["payload"] as? [String: Any])?["postback-sequence-index"] as? Int == 0 }
                    .count >= 4
            }
            #expect(arrived, "four first postbacks\n\(pipeline.logs())")
            let firsts = pipeline.receivedPostbacks().filter {
                ($0["payload"] as? [String: Any])?["postback-sequence-index"] as? Int == 0
            }.compactMap { $0["body"] as? [String: Any] }
            let coarse = firsts.map { $0["coarse-conversion-value"] as? String ?? "none" }.sorted()
            #expect(coarse == ["high", "high", "none", "none"], "\(firsts)")
            #expect(firsts.allSatisfy { $0["conversion-value"] == nil })
        }

        @Test func invalidInputIsRefusedWithProblemJSONAndNeverReachesThePipeline() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            let pipeline = try PipelineProcesses(redis: redis, timeScale: 86_400, inProcess: true)
            defer { pipeline.stop() }
            #expect(try await http.waitUntilUp("\(pipeline.ingestURL)/health"), "ingest starts\n\(pipeline.logs())")
            let connection = redis.connect()

            struct BadRequest {
                let path: String
                let body: String
                let status: Int
                let reason: String
                var token: String? = nil
                var method = "POST"
            }
            // A network's real key, JSON-escaped: only its SKAdNetwork key is wrong below.
            let pem = SigningKey.generate().publicKey.pemRepresentation.replacingOccurrences(of: "\n", with: "\\n")
            let cases = [
                BadRequest(path: "/v1/impressions", body: "not json", status: 400, reason: "invalid-json"),
                BadRequest(
                    path: "/v1/impressions",
                    body: #"{"device-identifier":"d","impression":"a.b","interaction":{"type":"click","time":1,"loaded-at":1}}"#,
                    status: 400, reason: "invalid-components"),
                BadRequest(
                    path: "/v1/impressions",
                    body: #"{"device-identifier":"d","impression":"a.b.c","interaction":{"type":"view","time":1}}"#, status: 400,
                    reason: "invalid-time"),
                BadRequest(
                    path: "/v1/conversions",
                    body: #"{"device-identifier":"d","advertised-item-identifier":1,"conversion-type":"purchase","time":1}"#,
                    status: 400, reason: "invalid-json", token: "some-app-key"),
                BadRequest(
                    path: "/v1/conversions",
                    body: #"{"device-identifier":"d","advertised-item-identifier":1,"conversion-type":"download","time":1}"#,
                    status: 401, reason: "missing-app-key"),
                BadRequest(
                    path: "/v1/conversions",
                    body:
                        #"{"device-identifier":"d","advertised-item-identifier":1,"conversion-type":"download","time":1700000000000}"#,
                    status: 401, reason: "invalid-app-key", token: "never-issued"),
                BadRequest(
                    path: "/v1/conversion-value-updates",
                    body: #"{"device-identifier":"d","advertised-item-identifier":1,"time":1,"fineConversionValue":64}"#,
                    status: 400,
                    reason: "value-out-of-range", token: "some-app-key"),
                BadRequest(
                    path: "/v1/impressions", body: String(repeating: " ", count: 70_000) + "{}", status: 413,
                    reason: "body-too-large"),
                BadRequest(path: "/v1/admin/advertised-apps/1", body: "{}", status: 401, reason: "unauthorized", method: "PUT"),
                BadRequest(
                    path: "/v1/admin/advertised-apps/1", body: "{}", status: 401, reason: "unauthorized", token: "wrong",
                    method: "PUT"),
                BadRequest(
                    path: "/v1/admin/advertised-apps/1", body: #"{"AttributionWindows":{"global":{"install":{"view":8}}}}"#,
                    status: 400, reason: "value-out-of-range", token: pipeline.adminToken, method: "PUT"),
                BadRequest(
                    path: "/v1/admin/ad-networks/Upper.Case", body: #"{"public-key":"x","postback-url":"https://x.example"}"#,
                    status: 400,
                    reason: "invalid-ad-network-identifier", token: pipeline.adminToken, method: "PUT"),
                BadRequest(
                    path: "/v1/admin/ad-networks/a.net", body: #"{"public-key":"x","postback-url":"https://x.example"}"#,
                    status: 400,
                    reason: "invalid-public-key", token: pipeline.adminToken, method: "PUT"),
                BadRequest(
                    path: "/v1/admin/ad-networks/a.net",
                    body: #"{"public-key":"\#(pem)","postback-url":"https://x.example","skan-public-key":"zzz"}"#,
                    status: 400, reason: "invalid-public-key", token: pipeline.adminToken, method: "PUT"),
                BadRequest(path: "/v1/nowhere", body: "{}", status: 404, reason: "not-found"),
            ]
            for c in cases {
                // The admin API is on its own listener.
                let base = c.path.hasPrefix("/v1/admin/") ? pipeline.adminURL : pipeline.ingestURL
                let reply = try await http.send(c.method, base + c.path, raw: c.body, token: c.token)
                #expect(reply.status == c.status, "\(c.path) \(c.body.prefix(80))")
                #expect(reply.contentType == "application/problem+json", "\(c.path)")
                #expect(reply.json["reason"] as? String == c.reason, "\(c.path): \(String(decoding: reply.body, as: UTF8.self))")
                #expect(reply.json["status"] as? Int == c.status)
            }
            #expect(try await streamLength(StreamNames.events, on: connection) == 0, "nothing invalid reached the pipeline")

            // A well-formed impression with a bad signature passes ingest and is refused by the verifier with a reason.
            let network = Network(id: "a.net")
            try await register(network, on: pipeline)
            let forged = try impression(Network(id: "a.net"), id: UUID().uuidString, source: 1, at: Self.now())
            let accepted = try await http.send(
                "POST", "\(pipeline.ingestURL)/v1/impressions",
                json: [
                    "device-identifier": "d", "impression": forged,
                    "interaction": ["type": "click", "loaded-at": Self.now(), "time": Self.now()],
                ])
            #expect(accepted.status == 202)
            let refused = try await eventually(timeout: .seconds(15)) {
                try await streamLength(StreamNames.rejected, on: connection) == 1
            }
            #expect(refused, "\(pipeline.logs())")
            let rejection = try #require(try await streamRecords(StreamNames.rejected, on: connection).first?.message)
            guard case .rejected(let body) = try Envelope.decode(Array(rejection.utf8)).body else {
                Issue.record("not a rejection: \(rejection)")
                return
            }
            #expect(body.reason == .invalidSignature)
            #expect(!rejection.contains("\"d\""), "rejections carry no device identifier")
            #expect(try await streamLength(StreamNames.verified, on: connection) == 0)
        }
    }
}
