import AttributionCrypto
import AttributionModel
import Foundation
import RedisStreams
import TestSupport
import Testing

extension PipelineSuites {
    /// An update the app sent in time can reach the scheduler after its window closed: a stage held it
    /// when it died and the claim waited, Redis restarted, a replica stalled. It still counts while the
    /// window's postbacks are held (the fault run's ledger caught one lost this way in CI). Here
    /// attribution-winner is stopped (SIGSTOP) while two in-time updates wait for it, until window 0 has
    /// closed: device A had no value by then, so its window had no postback; device B's postback was
    /// held with an older value.
    @Suite("Late updates: counted while their window's postbacks are held", .serialized)
    struct LateUpdateTests {
        static let app: ItemIdentifier = 1_300_000_001
        static let publisher: ItemIdentifier = 5_838_492
        let http = HTTPTestClient()

        static func now() -> Milliseconds { Milliseconds(Date().timeIntervalSince1970 * 1000) }

        @Test func anUpdateRoutedAfterItsWindowClosedStillReachesThePostback() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            // A day lasts 1.5 s: window 0 ends 3 s after the install, its postbacks wait 1.5–3 s more.
            let scale = 57_600.0
            let pipeline = try PipelineProcesses(
                redis: redis, timeScale: scale,
                extraEnvironment: [
                    "CROWD_TIER_THRESHOLDS": "1,1,1", "TIMER_POLL_MS": "10", "WINDOW_CLOSE_GRACE_MS": "200",
                    "CONVERSION_SETTLE_MS": "100",
                ])
            defer { pipeline.stop() }
            try #require(try await http.waitUntilUp("\(pipeline.ingestURL)/health"), "ingest starts\n\(pipeline.logs())")
            try #require(try await http.waitUntilUp("\(pipeline.receiverURL)/health"), "receiver starts\n\(pipeline.logs())")
            let network = "late.adattributionkit"
            let key = SigningKey.generate()
            let appKey = try await pipeline.registerCampaign(
                network: network, publicKeyPEM: key.publicKey.pemRepresentation, publisher: Self.publisher, app: Self.app,
                http: http)
            let connection = redis.connect()

            func post(_ path: String, _ json: [String: Any], token: String? = nil) async throws {
                let reply = try await http.send("POST", "\(pipeline.ingestURL)\(path)", json: json, token: token)
                try #require(reply.status == 202, "\(path): \(String(decoding: reply.body, as: UTF8.self))")
            }
            func update(_ device: String, fine: Int, at time: Milliseconds) async throws {
                try await post(
                    "/v1/conversion-value-updates",
                    [
                        "device-identifier": device, "advertised-item-identifier": Self.app, "time": time,
                        "fineConversionValue": fine,
                    ], token: appKey)
            }
            func plans() async throws -> [PostbackPlan] {
                let keys = try await connection.send(RedisCommand("KEYS", "scheduler:plan:*")).elements.compactMap(\.string)
                return try await connection.pipeline(keys.map { RedisCommand("GET", $0) }).compactMap { reply in
                    try reply.bytes.map { try JSONCoding.decoder.decode(PostbackPlan.self, from: Data($0)) }
                }
            }

            // Two devices, each a click and an install; B's app reports fine value 10 at once.
            let devices: [String: (device: String, source: Int)] = [
                "A": ("device-\(UUID().uuidString)", 1111), "B": ("device-\(UUID().uuidString)", 2222),
            ]
            let t0 = Self.now()
            for (_, d) in devices {
                let payload = ImpressionPayload(
                    impressionIdentifier: UUID().uuidString, adNetworkIdentifier: AdNetworkIdentifier(network)!,
                    advertisedItemIdentifier: Self.app, publisherItemIdentifier: Self.publisher, sourceIdentifier: d.source,
                    timestamp: t0 - 3_000)
                let jws = try CompactJWS.sign(payload: JSONCoding.encoder.encode(payload), keyID: network, with: key)
                try await post(
                    "/v1/impressions",
                    [
                        "device-identifier": d.device, "impression": jws,
                        "interaction": ["type": "click", "loaded-at": t0 - 3_000, "time": t0 - 2_000],
                    ])
            }
            try await Task.sleep(for: .milliseconds(300))
            var installs: [String: Milliseconds] = [:]
            for (name, d) in devices {
                installs[name] = Self.now()
                try await post(
                    "/v1/conversions",
                    [
                        "device-identifier": d.device, "advertised-item-identifier": Self.app, "conversion-type": "download",
                        "time": installs[name]!,
                    ], token: appKey)
            }
            try await update(devices["B"]!.device, fine: 10, at: installs["B"]! + 10)
            let planned = try await eventually(timeout: .seconds(10), every: .milliseconds(20)) {
                let plans = try await plans()
                return plans.count == 2 && plans.contains { !$0.reported.isEmpty }
            }
            try #require(planned, "both installs planned, B's first update applied\n\(pipeline.logs())")

            // attribution-winner stops; the apps' next updates are acknowledged in time and wait for it.
            pipeline.signal("attribution-winner", SIGSTOP)
            try await update(devices["A"]!.device, fine: 21, at: installs["A"]! + 100)
            try await update(devices["B"]!.device, fine: 22, at: installs["B"]! + 100)
            let closed = try await eventually(timeout: .seconds(15), every: .milliseconds(20)) {
                try await plans().allSatisfy { $0.windowsDone[0] }
            }
            pipeline.signal("attribution-winner", SIGCONT)
            try #require(closed, "window 0 closes while the updates wait\n\(pipeline.logs())")
            #expect(try await plans().allSatisfy { $0.reported.count <= 1 }, "the updates had not reached the scheduler")
            #expect(
                try await connection.send(RedisCommand("ZCARD", DelayedQueueNames.heldPostbacks(window: 0) + ":due")).int == 1,
                "only B's window had a value when it closed")

            // Both reach the receiver with the late values: A's prepared late, B's re-prepared in place.
            let arrived = try await eventually(timeout: .seconds(20), every: .milliseconds(100)) {
                pipeline.receivedPostbacks().count >= 2
            }
            try #require(arrived, "window-0 postbacks arrive\n\(pipeline.logs())")
            try await Task.sleep(for: .milliseconds(500))  // a duplicate would come now
            let jwks = try await http.send("GET", "\(pipeline.ingestURL)/.well-known/jwks.json")
            let keys = try JSONDecoder().decode(JWKSet.self, from: jwks.body)
            var values: [String: [Int?]] = [:]
            for line in pipeline.receivedPostbacks() {
                let verified = try PostbackVerifier.verifyAny(
                    body: try JSONSerialization.data(withJSONObject: try #require(line["body"])), keys: keys)
                guard verified.payload.postbackSequenceIndex == 0 else { continue }
                values[verified.payload.sourceIdentifier, default: []].append(verified.body.conversionValue)
            }
            #expect(values == ["1111": [21], "2222": [22]], "one window-0 postback per device, with the late value")
            let metrics = try await http.send("GET", "\(try #require(pipeline.url(of: "scheduler")))/metrics")
            #expect(
                String(decoding: metrics.body, as: UTF8.self).contains("scheduler_late_updates_total 2"),
                "the scheduler counts the late updates")
        }
    }
}
