import AttributionModel
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceRuntime
import TestSupport
import Testing

extension PipelineSuites {
    /// The scheduler alone, on `attributions` entries the test writes itself, so that several land in
    /// one batch exactly as arranged.
    @Suite("Scheduler batches", .serialized)
    struct SchedulerBatchTests {
        static func attribution(
            _ id: String, publisher: ItemIdentifier, app: ItemIdentifier, country: String, at time: Milliseconds
        )
            -> Attribution
        {
            Attribution(
                conversionIdentifier: id, advertisedItemIdentifier: app, conversionType: .download, conversionTime: time,
                countryCode: country,
                winner: AttributedImpression(
                    adNetworkIdentifier: AdNetworkIdentifier("batch.adattributionkit")!,
                    impressionIdentifier: UUID().uuidString.lowercased(), sourceIdentifier: 4_321,
                    publisherItemIdentifier: publisher, interactionType: .click, kind: .adAttributionKit),
                nonWinners: [])
        }

        /// A redelivered attribution of a finished plan, then a fresh attribution, in one batch: the fresh
        /// one must be assessed on its own crowd. (Before the fix the finished one left its crowd replies
        /// unread, so the next attribution read them as its own: tier 3 from a crowd of one, a privacy leak.)
        @Test func aFinishedPlansRedeliveryDoesNotLendItsCrowdToTheNextAttribution() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            let connection = redis.connect()
            let now = Milliseconds(Date().timeIntervalSince1970 * 1000)
            let finished = Self.attribution("finished-conversion", publisher: 7_001, app: 8_001, country: "US", at: now)
            let fresh = Self.attribution("fresh-conversion", publisher: 7_002, app: 8_002, country: "FR", at: now)

            // Both conversions' devices are in one partition here: the stream tells the scheduler which.
            let partition = testPartitioning[0]
            // The finished conversion's crowds are large (tier 3); the fresh one's are empty (tier 0). One
            // Redis: one counter per crowd.
            let day = String(CrowdDayBuckets.day(of: now, policy: .realTime))
            for crowd in Crowd.all(for: finished) {
                _ = try await connection.send(RedisCommand("HSET", StageKeys.crowd(crowd, shard: nil), day, "50000"))
            }
            _ = try await connection.send(
                RedisCommand(bytes: [
                    Array("SET".utf8), Array(StageKeys.plan(conversion: "finished-conversion", in: partition).utf8),
                    StageKeys.finishedPlanMarker,
                ]))
            for attribution in [finished, fresh] {
                let envelope = Envelope(
                    id: attribution.conversionIdentifier, time: now, body: .conversionAttributed(attribution))
                _ = try await connection.send(
                    StreamCommands.add(StreamNames.attributions(partition), message: envelope.encoded()))
            }

            let pipeline = try PipelineProcesses(redis: redis, timeScale: 1, only: ["scheduler"], inProcess: true)
            defer { pipeline.stop() }
            let planned = try await eventually(timeout: .seconds(20)) {
                try await connection.send(RedisCommand("EXISTS", StageKeys.plan(conversion: "fresh-conversion", in: partition)))
                    .int == 1
            }
            try #require(planned, "the fresh conversion is planned\n\(pipeline.logs())")
            let bytes = try #require(
                try await connection.send(RedisCommand("GET", StageKeys.plan(conversion: "fresh-conversion", in: partition)))
                    .bytes)
            let plan = try CompactCoding.decode(PostbackPlan.self, from: bytes)
            #expect(plan.crowd.tier == .zero, "a crowd of one is tier 0, got \(plan.crowd)")
            #expect(plan.crowd.sourceIdentifierDigits == 2)
            // The finished plan stays finished, and its crowd was not counted again.
            let marker = try await connection.send(
                RedisCommand("GET", StageKeys.plan(conversion: "finished-conversion", in: partition))
            ).string
            #expect(marker == "finished")
            let publisherCount = try await connection.send(
                RedisCommand("HGET", StageKeys.crowd(.publisherApp(7_001), shard: nil), day)
            ).string
            #expect(publisherCount == "50000")
        }
    }
}
