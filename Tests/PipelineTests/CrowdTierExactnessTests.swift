import AttributionModel
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceRuntime
import TestSupport
import Testing

extension PipelineSuites {
    /// Crowd tiers at the default configuration (8 consumer loops, batches of 200, `CROWD_CACHE_MS`
    /// 1000) with three scheduler replicas racing on one crowd: every conversion's tier is the one exact
    /// counting gives, whatever loop or replica took it.
    @Suite("Exact crowd tiers under racing schedulers", .serialized)
    struct CrowdTierExactnessTests {
        let http = HTTPTestClient()

        /// 1,050 conversions of one publisher app, advertised app, country and source id: the n-th
        /// conversion counted has a crowd of n in each of its crowds. So exactly 9 are tier 0, 90 tier 1,
        /// 900 tier 2 and 51 tier 3 (default thresholds 10, 100, 1,000), and the counters hold 1,050.
        /// Before conversions below the top threshold were ranked by Redis, concurrent batches missed each
        /// other's conversions and far more came out tier 0.
        @Test(arguments: TestRedisKind.engines)
        func racingSchedulerReplicasGiveEveryConversionItsExactTier(_ kind: TestRedisKind) async throws {
            let redis = try await kind.start()
            defer { redis.stop() }
            let connection = redis.connect(label: "test.crowd-tiers")
            let pipeline = try PipelineProcesses(redis: redis, timeScale: 1, only: ["scheduler"])
            defer { pipeline.stop() }
            for replica in 2...3 {
                try pipeline.start("scheduler-\(replica)", executable: "scheduler", port: try freeLoopbackPort())
            }
            for service in ["scheduler", "scheduler-2", "scheduler-3"] {
                let url = try #require(pipeline.url(of: service))
                #expect(try await http.waitUntilUp("\(url)/health"), "\(service) is up\n\(pipeline.logs())")
            }

            let total = 1_050
            let now = Milliseconds(Date().timeIntervalSince1970 * 1000)
            let attributions = (0..<total).map { n in
                SchedulerBatchTests.attribution(
                    "crowd-\(kind)-\(n)", publisher: 7_100, app: 8_100, country: "DE", at: now + Milliseconds(n))
            }
            let partitioning = testPartitioning
            // Written from four tasks at once, a few at a time, so that every loop of every replica takes
            // small batches that overlap in time.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<4 {
                    group.addTask {
                        let writer = redis.connect(label: "test.crowd-tiers.\(lane)")
                        for (n, attribution) in attributions.enumerated() where n % 4 == lane {
                            let envelope = Envelope(
                                id: attribution.conversionIdentifier, time: now, body: .conversionAttributed(attribution))
                            _ = try await writer.send(
                                StreamCommands.add(
                                    StreamNames.attributions(partitioning[n % partitioning.count]), message: envelope.encoded()))
                        }
                    }
                }
                try await group.waitForAll()
            }

            let keys = attributions.indices.map { n in
                StageKeys.plan(conversion: attributions[n].conversionIdentifier, in: partitioning[n % partitioning.count])
            }
            var plans: [PostbackPlan] = []
            let planned = try await eventually(timeout: .seconds(60), every: .milliseconds(500)) {
                let replies = try await connection.pipeline(keys.map { RedisCommand("GET", $0) })
                plans = try replies.compactMap(\.bytes).map { try CompactCoding.decode(PostbackPlan.self, from: $0) }
                return plans.count == total
            }
            try #require(planned, "every conversion is planned (\(plans.count) of \(total))\n\(pipeline.logs())")

            var tiers = [0, 0, 0, 0]
            for plan in plans { tiers[plan.crowd.tier.rawValue] += 1 }
            #expect(tiers == [9, 90, 900, total - 999], "conversions per tier 0, 1, 2, 3")
            // Exact counting keeps 4 source digits from tier 2 on, and sends the country only at tier 3.
            #expect(plans.filter { $0.crowd.sourceIdentifierDigits == 4 }.count == total - 99)
            #expect(plans.filter(\.crowd.countryIsTierThree).count == total - 999)

            // Counted once each: the advertised app's counter (on a cluster, its shards together) holds every conversion.
            let shards = redis.cluster ? partitioning.partitions.map(Optional.some) : [nil]
            var counted = 0
            var perShard: [Int] = []
            for shard in shards {
                let reply = try await connection.send(
                    RedisCommand("HGETALL", StageKeys.crowd(.advertisedApp(8_100), shard: shard)))
                let flat = reply.elements
                // Day fields only: `c:<conversion>` fields are the ranks the counter gave.
                var inShard = 0
                for index in stride(from: 0, to: flat.count - 1, by: 2) where flat[index].int != nil {
                    inShard += Int(flat[index + 1].int ?? 0)
                }
                counted += inShard
                perShard.append(inShard)
            }
            #expect(counted == total, "the advertised app's crowd counted \(counted) conversions")
            // Below the top threshold every conversion is counted and ranked in the crowd's home shard (on a
            // cluster; past it, in its own partition's shard).
            #expect(perShard.max() ?? 0 >= 999, "the crowd's counts per shard: \(perShard)")
        }
    }
}
