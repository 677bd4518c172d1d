import AttributionCrypto
import AttributionModel
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceRuntime
import TestSupport
import Testing

extension PipelineSuites {
    /// An update the app sent in time can reach the scheduler after its window closed: a stage held it
    /// when it died and the claim waited, Redis restarted, a replica stalled. It still counts while the
    /// window's postbacks are held (the fault run's ledger caught one lost this way in CI). Here
    /// attribution-winner is stopped (SIGSTOP) while in-time updates wait for it, until their window has
    /// closed. Window 0: device A had no value by then, so its window had no postback; B's and C's were
    /// held with older values, and C's late update is a lock. Window 2: D's plan had finished, and is
    /// kept until its last postback is released.
    @Suite("Late updates: counted while their window's postbacks are held", .serialized)
    struct LateUpdateTests {
        static let app: ItemIdentifier = 1_300_000_001
        static let publisher: ItemIdentifier = 5_838_492
        let http = HTTPTestClient()

        static func now() -> Milliseconds { Milliseconds(Date().timeIntervalSince1970 * 1000) }

        @Test func anUpdateRoutedAfterItsWindowClosedStillReachesThePostback() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            // A day lasts 1 s: window 0 ends 2 s after the install, window 2 after 35 s; postbacks wait
            // 1–2 s (window 0) or 1–6 s. Timers fire at the window's end, with no grace.
            let scale = 86_400.0
            let pipeline = try PipelineProcesses(
                redis: redis, timeScale: scale,
                extraEnvironment: [
                    "CROWD_TIER_THRESHOLDS": "1,1,1", "TIMER_POLL_MS": "10", "WINDOW_CLOSE_GRACE_MS": "0",
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
            let day = Milliseconds(86_400_000 / scale)

            func post(_ path: String, _ json: [String: Any], token: String? = nil) async throws {
                let reply = try await http.send("POST", "\(pipeline.ingestURL)\(path)", json: json, token: token)
                try #require(reply.status == 202, "\(path): \(String(decoding: reply.body, as: UTF8.self))")
            }
            func update(_ device: String, fine: Int, coarse: String = "low", lock: Bool = false, at time: Milliseconds)
                async throws
            {
                try await post(
                    "/v1/conversion-value-updates",
                    [
                        "device-identifier": device, "advertised-item-identifier": Self.app, "time": time,
                        "fineConversionValue": fine, "coarseConversionValue": coarse, "lockPostback": lock,
                    ], token: appKey)
            }
            /// Plan key → the plan, or nil for the finished marker.
            func plans() async throws -> [String: PostbackPlan?] {
                let keys = try await connection.send(RedisCommand("KEYS", "scheduler:plan:*")).elements.compactMap(\.string)
                let replies = try await connection.pipeline(keys.map { RedisCommand("GET", $0) })
                return try Dictionary(
                    uniqueKeysWithValues: zip(keys, replies).map { key, reply in
                        (
                            key,
                            try reply.bytes.flatMap { $0 == Array("finished".utf8) ? nil : $0 }.map {
                                try CompactCoding.decode(PostbackPlan.self, from: $0)
                            }
                        )
                    })
            }
            func plan(winning source: Int) async throws -> PostbackPlan? {
                try await plans().values.compactMap { $0 }.first { $0.attribution.winner.sourceIdentifier == source }
            }
            /// Received postbacks for `window`: source id (as sent) → the values, fine or else coarse.
            func received(window: Int) async throws -> [String: [String]] {
                let jwks = try await http.send("GET", "\(pipeline.ingestURL)/.well-known/jwks.json")
                let keys = try JSONDecoder().decode(JWKSet.self, from: jwks.body)
                var values: [String: [String]] = [:]
                for line in pipeline.receivedPostbacks() {
                    let verified = try PostbackVerifier.verifyAny(
                        body: try JSONSerialization.data(withJSONObject: try #require(line["body"])), keys: keys)
                    guard verified.payload.postbackSequenceIndex == window else { continue }
                    let value = verified.body.conversionValue.map(String.init) ?? verified.body.coarseConversionValue?.rawValue
                    values[verified.payload.sourceIdentifier, default: []].append(value ?? "none")
                }
                return values
            }

            // Four devices, each a click and an install; B's, C's and D's apps report a value at once.
            let sources = ["A": 1111, "B": 2222, "C": 3333, "D": 4444]
            let devices = sources.mapValues { _ in "device-\(UUID().uuidString)" }
            let t0 = Self.now()
            for (name, device) in devices {
                let payload = ImpressionPayload(
                    impressionIdentifier: UUID().uuidString, adNetworkIdentifier: AdNetworkIdentifier(network)!,
                    advertisedItemIdentifier: Self.app, publisherItemIdentifier: Self.publisher, sourceIdentifier: sources[name]!,
                    timestamp: t0 - 3_000)
                let jws = try CompactJWS.sign(payload: JSONCoding.encoder.encode(payload), keyID: network, with: key)
                try await post(
                    "/v1/impressions",
                    [
                        "device-identifier": device, "impression": jws,
                        "interaction": ["type": "click", "loaded-at": t0 - 3_000, "time": t0 - 2_000],
                    ])
            }
            try await Task.sleep(for: .milliseconds(300))
            var installs: [String: Milliseconds] = [:]
            for (name, device) in devices {
                installs[name] = Self.now()
                try await post(
                    "/v1/conversions",
                    [
                        "device-identifier": device, "advertised-item-identifier": Self.app, "conversion-type": "download",
                        "time": installs[name]!,
                    ], token: appKey)
            }
            try await update(devices["B"]!, fine: 10, at: installs["B"]! + 10)
            try await update(devices["C"]!, fine: 30, at: installs["C"]! + 10)
            try await update(devices["D"]!, fine: 40, at: installs["D"]! + 10)
            let planned = try await eventually(timeout: .seconds(10), every: .milliseconds(20)) {
                let plans = try await plans().values.compactMap { $0 }
                return plans.count == 4 && plans.filter { !$0.reported.isEmpty }.count == 3
            }
            try #require(planned, "the installs planned, the first updates applied\n\(pipeline.logs())")

            // attribution-winner stops; the apps' next updates are acknowledged in time and wait for it.
            pipeline.signal("attribution-winner", SIGSTOP)
            try await update(devices["A"]!, fine: 21, at: installs["A"]! + 100)
            try await update(devices["B"]!, fine: 22, at: installs["B"]! + 100)
            try await update(devices["C"]!, fine: 33, lock: true, at: installs["C"]! + 200)
            // A window's timer is set by its first value: A's window 0 has none, so only its end passes.
            let closed = try await eventually(timeout: .seconds(15), every: .milliseconds(20)) {
                try await plans().values.allSatisfy { $0?.windowsDone[0] == true || $0?.reported.isEmpty == true }
                    && Self.now() > installs.values.max()! + 2 * day
            }
            let waited = try await plans().values.allSatisfy { ($0?.reported.count ?? 9) <= 1 }
            let held = try await queueCount(DelayedQueues.heldPostbacks[0], on: connection)
            pipeline.signal("attribution-winner", SIGCONT)
            try #require(closed, "window 0 closes while the updates wait\n\(pipeline.logs())")
            #expect(waited, "the updates had not reached the scheduler when window 0 closed")
            #expect(held == 3, "B's, C's and D's windows had a value when they closed, A's none")

            // Window 0 reaches the receiver with the late values: A's prepared late, B's swapped, C's
            // swapped with a delay redrawn from its lock, D's as it was.
            let firstArrived = try await eventually(timeout: .seconds(20), every: .milliseconds(100)) {
                try await received(window: 0).count == 4
            }
            try #require(firstArrived, "window-0 postbacks arrive\n\(pipeline.logs())")
            try await Task.sleep(for: .milliseconds(300))  // a duplicate would come now
            #expect(
                try await received(window: 0) == ["1111": ["21"], "2222": ["22"], "3333": ["33"], "4444": ["40"]],
                "one window-0 postback per device, with the late values")
            let lockedAt = try #require(try await plan(winning: 3333)?.closed[0]?.at)
            #expect(lockedAt == installs["C"]! + 200, "C's window froze at its lock")

            // Window 2 (days 8–35): D's app reports its first window-2 value half a day before the end,
            // and it reaches the scheduler only after the end. No value had come for window 2 by then, so
            // no timer closed it; D's plan is kept past the end for the window's shortest delay, so that
            // the late update closes the window at once and prepares its postback.
            let dInstall = installs["D"]!
            try await Task.sleep(for: .milliseconds(max(0, dInstall + 34 * day - Self.now())))
            pipeline.signal("attribution-winner", SIGSTOP)
            try await update(devices["D"]!, fine: 41, coarse: "high", at: dInstall + 34 * day + day / 2)
            try await Task.sleep(for: .milliseconds(max(0, dInstall + 35 * day + day / 4 - Self.now())))
            let kept = try await plan(winning: 4444)
            pipeline.signal("attribution-winner", SIGCONT)
            try #require(kept != nil, "D's plan is kept past window 2's end\n\(pipeline.logs())")
            #expect(kept?.reported.count == 1, "D's late update had not reached the scheduler")
            #expect(kept?.windowsDone[2] == false, "no timer closed window 2: no value had come for it")
            let thirdArrived = try await eventually(timeout: .seconds(15), every: .milliseconds(100)) {
                try await received(window: 2)["44"] != nil
            }
            try #require(thirdArrived, "D's window-2 postback arrives\n\(pipeline.logs())")
            #expect(try await received(window: 2)["44"] == ["high"], "with the late coarse value")
            #expect(try await received(window: 1).isEmpty, "no app reported a value in window 1: none sent")

            // Once every last postback is released, each plan leaves only its marker: a kept plan's key
            // expires beside `scheduler:finished:…`, a plan finished with nothing held becomes the marker.
            let marked = try await eventually(timeout: .seconds(15), every: .milliseconds(100)) {
                let plans = try await plans()
                let kept = try await connection.send(RedisCommand("KEYS", "scheduler:finished:*")).elements.compactMap(\.string)
                let finished = Set(
                    plans.keys.map { $0.replacingOccurrences(of: "scheduler:plan:", with: "") }
                        + kept.map { $0.replacingOccurrences(of: "scheduler:finished:", with: "") })
                return finished.count == 4 && plans.values.allSatisfy { $0 == nil }
            }
            #expect(marked, "finished plans become markers once their postbacks are released")
            let metrics = String(
                decoding: try await http.send("GET", "\(try #require(pipeline.url(of: "scheduler")))/metrics").body, as: UTF8.self
            )
            for line in [
                #"scheduler_late_postbacks_total{change="prepared"} 2"#, #"scheduler_late_postbacks_total{change="swapped"} 2"#,
            ] {
                #expect(metrics.contains(line), "the scheduler counts what late updates changed: \(line)")
            }
            #expect(!metrics.contains("too-late"), "nothing was too late")
        }
    }
}
