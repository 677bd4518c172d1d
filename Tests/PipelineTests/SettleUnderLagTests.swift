import AttributionModel
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceRuntime
import TestSupport
import Testing

extension PipelineSuites {
    /// attribution-winner alone, far behind on `verified` entries the test writes itself: a conversion
    /// whose impression the verifier wrote just after it must still be attributed to that impression.
    @Suite("Settling while behind on verified")
    struct SettleUnderLagTests {
        static let app: ItemIdentifier = 1_108_187_390

        static func impression(device: String, at time: Milliseconds) -> Envelope {
            Envelope(
                time: time,
                body: .impressionVerified(
                    VerifiedImpression(
                        deviceIdentifier: device,
                        payload: ImpressionPayload(
                            impressionIdentifier: UUID().uuidString,
                            adNetworkIdentifier: AdNetworkIdentifier("lag.adattributionkit")!,
                            advertisedItemIdentifier: app, publisherItemIdentifier: 5_838_492, sourceIdentifier: 4_321,
                            timestamp: time),
                        interaction: .click(at: time, loadedAt: time), kind: .adAttributionKit)))
        }

        /// A verified install of the app on `device`, received at `time`.
        static func install(device: String, at time: Milliseconds) -> Envelope {
            Envelope(
                time: time,
                body: .conversionVerified(
                    VerifiedConversion(
                        report: ConversionReport(
                            deviceIdentifier: device, advertisedItemIdentifier: app, conversionType: .download, time: time,
                            countryCode: "US", receivedAt: time),
                        app: AdvertisedAppConfiguration(itemIdentifier: app))))
        }

        /// The first decision on `attributions`, when it attributed; records an issue (with what was
        /// decided instead) and returns nil otherwise.
        static func attribution(on attributions: String, _ connection: RedisConnection) async throws -> Attribution? {
            let records = try await streamRecords(attributions, on: connection).compactMap { record in
                record.fields["e"].flatMap { try? Envelope.decode($0) }
            }
            guard case .conversionAttributed(let attribution)? = records.first?.body else {
                Issue.record(
                    "not attributed: \(records); rejected: \(try await streamLength(StreamNames.rejected, on: connection))")
                return nil
            }
            return attribution
        }

        /// The install, 5,000 other devices' impressions, then the install's impression, all in one
        /// partition and written before attribution-winner starts reading one at a time: it reads the
        /// impression seconds after the install's 250 ms settle time ran out. (Before the settle time
        /// counted from `verified`, the install was refused `no-eligible-impression`.)
        @Test func aConversionWaitsForTheImpressionsWrittenJustAfterIt() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            let pipeline = try PipelineProcesses(redis: redis, timeScale: 1, only: [])
            defer { pipeline.stop() }
            let connection = redis.connect()
            let now = Milliseconds(Date().timeIntervalSince1970 * 1000)
            let device = "lagging-device"
            let partition = testPartitioning.of(device: device)
            var others: [String] = []
            var index = 0
            while others.count < 5_000 {
                index += 1
                if testPartitioning.of(device: "other-\(index)") == partition { others.append("other-\(index)") }
            }
            let install = Self.install(device: device, at: now)
            let entries =
                [install] + others.map { Self.impression(device: $0, at: now - 60_000) }
                + [Self.impression(device: device, at: now - 60_000)]
            _ = try await connection.pipeline(
                try entries.map { StreamCommands.add(StreamNames.verified(partition), message: try $0.encoded()) })

            try pipeline.start("attribution-winner", port: try freeLoopbackPort(), ["BATCH_SIZE": "1"])
            let attributions = StreamNames.attributions(partition)
            // Decided: attributed (on `attributions`) or refused (on `rejected`).
            try #require(
                try await eventually(timeout: .seconds(60)) {
                    try await streamLength(attributions, on: connection) + streamLength(StreamNames.rejected, on: connection) > 0
                }, "the install is decided\n\(pipeline.logs())")
            guard let attribution = try await Self.attribution(on: attributions, connection) else { return }
            #expect(attribution.conversionIdentifier == install.id)
            #expect(try await streamLength(StreamNames.rejected, on: connection) == 0)
            let metrics = try await HTTPTestClient().send(
                "GET", "\(try #require(pipeline.url(of: "attribution-winner")))/metrics")
            #expect(String(decoding: metrics.body, as: UTF8.self).contains("winner_settle_extensions_total"), "it waited")
        }

        /// An impression pending on a verifier replica that died (taken from `events`, never written to
        /// `verified`), and the device's install after it, verified by a live replica: the install waits
        /// until the impression is verified (another replica claims it after `CLAIM_IDLE_MS`) and the winner
        /// has read its verified form, then wins with it. (Before it waited, the install was refused
        /// `no-eligible-impression` 250 ms later; before it waited for the read, as soon as the verifier
        /// finished.)
        @Test func aConversionWaitsForAnImpressionPendingOnADeadVerifier() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            let pipeline = try PipelineProcesses(redis: redis, timeScale: 1, only: [])
            defer { pipeline.stop() }
            let connection = redis.connect()
            let device = "device-of-a-dead-verifier"
            let partition = testPartitioning.of(device: device)
            let events = StreamNames.events(partition)
            // The impression's event, taken by a verifier consumer that then died.
            _ = try await connection.send(RedisCommand("XGROUP", "CREATE", events, ConsumerGroups.verifier.name, "0", "MKSTREAM"))
            let taken = try await connection.send(StreamCommands.add(events, message: Array("an impression".utf8)))
            let entry = try #require(taken.string)
            _ = try await connection.send(
                RedisCommand("XREADGROUP", "GROUP", ConsumerGroups.verifier.name, "dead-verifier", "STREAMS", events, ">"))
            try await Task.sleep(for: .milliseconds(5))
            let now = Milliseconds(Date().timeIntervalSince1970 * 1000)
            let install = Self.install(device: device, at: now)
            _ = try await connection.send(StreamCommands.add(StreamNames.verified(partition), message: install.encoded()))
            try pipeline.start(
                "attribution-winner", port: try freeLoopbackPort(), ["CONVERSION_SETTLE_MS": "250", "CLAIM_IDLE_MS": "2000"])

            let attributions = StreamNames.attributions(partition)
            func decided() async throws -> Int {
                try await streamLength(attributions, on: connection) + streamLength(StreamNames.rejected, on: connection)
            }
            try await Task.sleep(for: .seconds(3))
            #expect(try await decided() == 0, "the install waits for the verifier\n\(pipeline.logs())")

            // Another replica claims the impression and verifies it; a winner consumer that then dies takes
            // its verified form, so the live winner reads it only after its own CLAIM_IDLE_MS (2 s). Looks
            // at the install meanwhile find the verifier holding nothing and `verified` read past the
            // install's horizon: it still waits for what the verifier wrote.
            // One transaction, so that the live winner, blocked reading `verified`, cannot take it first.
            let verified = StreamNames.verified(partition)
            _ = try await connection.pipeline([
                RedisCommand("MULTI"),
                StreamCommands.add(verified, message: Self.impression(device: device, at: now - 60_000).encoded()),
                RedisCommand("XACK", events, ConsumerGroups.verifier.name, entry),
                RedisCommand(
                    "XREADGROUP", "GROUP", ConsumerGroups.attributionWinner.name, "dead-winner", "STREAMS", verified, ">"),
                RedisCommand("EXEC"),
            ])
            try await Task.sleep(for: .seconds(1))
            #expect(try await decided() == 0, "the install waits for the winner to read the impression\n\(pipeline.logs())")
            try #require(try await eventually(timeout: .seconds(30)) { try await decided() > 0 }, "\(pipeline.logs())")
            guard let attribution = try await Self.attribution(on: attributions, connection) else { return }
            #expect(attribution.conversionIdentifier == install.id)
            #expect(attribution.winner.adNetworkIdentifier.rawValue == "lag.adattributionkit")
        }
    }
}
