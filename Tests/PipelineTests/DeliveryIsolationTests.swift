import AttributionCrypto
import AttributionModel
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceRuntime
import TestSupport
import Testing

extension PipelineSuites {
    /// One ad network's endpoint hangs (accepts, never answers within `DELIVERY_TIMEOUT_MS`), another's
    /// answers: as real processes, the answering network's postbacks leave as soon as they are due, the
    /// hanging destination's circuit opens, and none of its postbacks is lost (each ends as a dead letter
    /// once its 9 days, scaled, pass while the destination stays down).
    @Suite("Delivery isolation: one hanging destination", .serialized)
    struct DeliveryIsolationTests {
        let http = HTTPTestClient()
        let healthy = "healthy.adattributionkit"
        let hanging = "hanging.adattributionkit"

        @Test func aHangingDestinationDelaysOnlyItsOwnPostbacks() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            // 9 days last 9 s: the hanging network's postbacks end in dead letters within the test.
            let processes = try PipelineProcesses(
                redis: redis, timeScale: 86_400, extraEnvironment: ["TIMER_POLL_MS": "10", "DELIVERY_TIMEOUT_MS": "10000"])
            defer { processes.stop() }
            let hungPort = try freeLoopbackPort()
            try processes.start(
                "receiver-hung", executable: "attribution",
                arguments: [
                    "receiver", "--port", String(hungPort), "--jwks-url", "\(processes.ingestURL)/.well-known/jwks.json",
                    "--output",
                    processes.directory.appendingPathComponent("hung.jsonl").path,
                ],
                port: nil)
            let hungURL = "http://127.0.0.1:\(hungPort)"
            for url in [processes.ingestURL, processes.receiverURL, hungURL] {
                try #require(try await http.waitUntilUp("\(url)/health"), "\(url) starts\n\(processes.logs())")
            }
            // Holds every postback 600 s: far past the dispatcher's 10 s timeout.
            let control = try await http.send("POST", "\(hungURL)/control", json: ["delay-ms": 600_000])
            try #require(control.status == 200)
            for (network, receiver) in [(healthy, processes.receiverURL), (hanging, hungURL)] {
                let reply = try await http.send(
                    "PUT", "\(processes.adminURL)/v1/admin/ad-networks/\(network)",
                    json: [
                        "public-key": SigningKey.generate().publicKey.pemRepresentation, "postback-url": "\(receiver)/postbacks",
                    ],
                    token: processes.adminToken)
                try #require(reply.status == 200)
            }

            // Three waves 2 s apart, each 40 postbacks per network, interleaved on `postbacks`.
            let connection = redis.connect()
            var releasedAt: [String: Milliseconds] = [:]
            var hangingIdentifiers: [String] = []
            for _ in 0..<3 {
                let orders = (0..<40).flatMap { _ in
                    [DeliveryTests.order(network: healthy), DeliveryTests.order(network: hanging)]
                }
                let now = WallClock.nowMilliseconds()
                _ = try await connection.pipeline(
                    orders.map {
                        StreamCommands.add(
                            StreamNames.postbacks(testPartitioning[0]), message: CompactHeldPostback.encode($0, dueAt: now))
                    })
                for order in orders {
                    let id = order.payload.postbackIdentifier
                    if order.payload.adNetworkIdentifier.rawValue == healthy {
                        releasedAt[id] = now
                    } else {
                        hangingIdentifiers.append(id)
                    }
                }
                try await Task.sleep(for: .seconds(2))
            }

            let delivered = try await eventually(timeout: .seconds(15), every: .milliseconds(100)) {
                try await accepted(processes.receiverURL).count >= releasedAt.count
            }
            try #require(delivered, "every healthy postback delivered\n\(processes.logs())")
            let arrivals = try await accepted(processes.receiverURL)
            let lateness = arrivals.compactMap { attempt in releasedAt[attempt.postbackIdentifier].map { attempt.at - $0 } }
            let latest = lateness.max() ?? .max
            print("DeliveryIsolationTests: healthy postbacks arrived at most \(latest) ms after they were due")
            #expect(lateness.count == releasedAt.count)
            #expect(latest <= 2_000, "the healthy network's postbacks waited on the hanging one: up to \(latest) ms")

            var latestByWave: [Milliseconds: Milliseconds] = [:]
            for attempt in arrivals {
                guard let due = releasedAt[attempt.postbackIdentifier] else { continue }
                latestByWave[due] = max(latestByWave[due] ?? 0, attempt.at - due)
            }
            let byWave = latestByWave.sorted { $0.key < $1.key }.map(\.value)
            print("DeliveryIsolationTests: latest arrival per wave (ms after due): \(byWave)")

            // The hanging destination's circuit opens (its first attempts time out after 10 s), in the
            // dispatcher's metrics.
            let metricsURL = "\(try #require(processes.url(of: "dispatcher")))/metrics"
            var text = ""
            let open = try await eventually(timeout: .seconds(20), every: .milliseconds(200)) {
                text = String(decoding: try await http.send("GET", metricsURL).body, as: UTF8.self)
                return text.contains("dispatcher_destination_circuit_open{destination=\"\(hungURL)\"} 1")
            }
            #expect(open, "\(text.split(separator: "\n").filter { $0.contains("destination") }.joined(separator: "\n"))")
            // And in `attribution status`, once the replica's report is written (every 5 s).
            var status = ""
            let listed = try await eventually(timeout: .seconds(15), every: .milliseconds(500)) {
                status = try OperationsTests.run(["status", "--redis-url", redis.url])
                return status.split(separator: "\n").contains { $0.hasPrefix(hungURL) }
            }
            #expect(listed, "\(status)")
            #expect(!status.contains(processes.receiverURL), "the healthy destination's circuit is closed")

            // Nothing of the hanging network's is lost: each postback ends as a dead letter.
            let dead = try await eventually(timeout: .seconds(60), every: .milliseconds(200)) {
                Set(try await deadLetters(connection)).isSuperset(of: hangingIdentifiers)
            }
            #expect(dead, "every postback to the hanging destination is dead-lettered\n\(processes.logs())")
            #expect(Set(try await deadLetters(connection)).isDisjoint(with: releasedAt.keys))
            #expect(try await queueCount(DelayedQueues.deliveryRetries, on: connection) == 0, "no in-flight record left behind")
        }

        /// A pipeline whose receiver answers 1.5 s late (past a batch's wait, within the 2 s timeout), with
        /// 10 postbacks released and each attempt handed over as an in-flight record.
        func slowDestinationWithAttemptsUnderWay(_ redis: RedisServer) async throws -> (PipelineProcesses, [PostbackOrder]) {
            // A minute lasts 1 ms (the first retry's wait); a lease is 2 × 2 s + 5 s.
            let processes = try PipelineProcesses(
                redis: redis, timeScale: 60_000, extraEnvironment: ["TIMER_POLL_MS": "10", "DELIVERY_TIMEOUT_MS": "2000"])
            try await registerHealthy(processes)
            let connection = redis.connect()
            // One postback first, answered at once: the receiver fetches the key set again for the
            // dispatcher's key (published after the receiver started), so the 10 are not refused for it.
            let warmUp = DeliveryTests.order(network: healthy)
            _ = try await connection.pipeline([
                StreamCommands.add(
                    StreamNames.postbacks(testPartitioning[0]),
                    message: CompactHeldPostback.encode(warmUp, dueAt: WallClock.nowMilliseconds()))
            ])
            let warm = try await eventually(timeout: .seconds(10), every: .milliseconds(20)) {
                try await accepted(processes.receiverURL).count == 1
            }
            try #require(warm, "the warm-up postback delivered\n\(processes.logs())")
            let slow = try await http.send("POST", "\(processes.receiverURL)/control", json: ["delay-ms": 1_500])
            try #require(slow.status == 200)
            let orders = (0..<10).map { _ in DeliveryTests.order(network: healthy) }
            let now = WallClock.nowMilliseconds()
            _ = try await connection.pipeline(
                orders.map {
                    StreamCommands.add(
                        StreamNames.postbacks(testPartitioning[0]), message: CompactHeldPostback.encode($0, dueAt: now))
                })
            let handedOver = try await eventually(timeout: .seconds(5), every: .milliseconds(20)) {
                try await queueCount(DelayedQueues.deliveryRetries, on: connection) == orders.count
            }
            try #require(handedOver, "the batch wrote an in-flight record per attempt\n\(processes.logs())")
            return (processes, orders)
        }

        /// The dispatcher is killed while its attempts to a slow destination are under way (handed over by
        /// their batch): their in-flight records come due after the lease, each counts as a failed attempt,
        /// and the retry delivers it. Nothing is lost.
        @Test func attemptsUnderWayWhenTheDispatcherDiesAreRetried() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            let (processes, orders) = try await slowDestinationWithAttemptsUnderWay(redis)
            defer { processes.stop() }
            let connection = redis.connect()
            processes.kill("dispatcher")
            _ = try await http.send("POST", "\(processes.receiverURL)/control", json: ["delay-ms": 0])
            try processes.startDispatcher()

            let identifiers = Set(orders.map(\.payload.postbackIdentifier))
            // Each lost attempt is a failed attempt in the new dispatcher's count, and its retry delivers
            // the postback (the receiver may also have recorded the killed attempt's answer: it answered
            // 1.5 s late, whether or not anyone still listened).
            let delivered = try await eventually(timeout: .seconds(30), every: .milliseconds(200)) {
                try await stats("delivered", connection) == orders.count + 1  // and the warm-up
            }
            #expect(delivered, "every postback retried after the lost attempt\n\(processes.logs())")
            #expect(try await stats("failed-attempts", connection) == orders.count, "each lost attempt counted as failed")
            #expect(Set(try await accepted(processes.receiverURL).map(\.postbackIdentifier)).isSuperset(of: identifiers))
            let settled = try await eventually(timeout: .seconds(10), every: .milliseconds(100)) {
                try await queueCount(DelayedQueues.deliveryRetries, on: connection) == 0
            }
            #expect(settled, "the retries delivered: no record left")
            #expect(try await deadLetters(connection).isEmpty)
        }

        /// SIGTERM while attempts to a slow destination are under way: the dispatcher lets them end and
        /// writes their outcomes before it exits, so each postback arrives once and no record is left.
        @Test func aStoppingDispatcherFinishesTheAttemptsUnderWay() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            let (processes, orders) = try await slowDestinationWithAttemptsUnderWay(redis)
            defer { processes.stop() }
            let stopped = try #require(processes.stopGracefully("dispatcher"))
            #expect(stopped.status == 0, "\(processes.logs())")
            let connection = redis.connect()
            #expect(try await queueCount(DelayedQueues.deliveryRetries, on: connection) == 0, "every outcome written")
            let identifiers = Set(orders.map(\.payload.postbackIdentifier))
            let attempts = try await accepted(processes.receiverURL).filter { identifiers.contains($0.postbackIdentifier) }
            #expect(Set(attempts.map(\.postbackIdentifier)) == identifiers)
            #expect(attempts.count == orders.count, "each postback once")
        }

        /// A batch far larger than a healthy destination's lane (2 in flight, 32 waiting): the overflow
        /// comes back as soon as the queue drains, not a delivery timeout (30 s here) later. Found in the
        /// round-trip benchmark: with 500 postbacks per batch one receiver got 194 a second.
        @Test func aBatchLargerThanTheLaneIsDeliveredPromptly() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            let processes = try PipelineProcesses(
                redis: redis, timeScale: 86_400,
                extraEnvironment: [
                    "TIMER_POLL_MS": "10", "DELIVERY_TIMEOUT_MS": "30000", "DELIVERY_CONCURRENCY_PER_HOST": "2",
                    "BATCH_SIZE": "300",
                ])
            defer { processes.stop() }
            try await registerHealthy(processes)
            let connection = redis.connect()
            let orders = (0..<300).map { _ in DeliveryTests.order(network: healthy) }
            let now = WallClock.nowMilliseconds()
            _ = try await connection.pipeline(
                orders.map {
                    StreamCommands.add(
                        StreamNames.postbacks(testPartitioning[0]), message: CompactHeldPostback.encode($0, dueAt: now))
                })
            // Over 260 of them overflow the lane: at a timeout each, they would take minutes.
            let delivered = try await eventually(timeout: .seconds(20), every: .milliseconds(100)) {
                try await stats("delivered", connection) == orders.count
            }
            #expect(delivered, "all delivered well within one delivery timeout\n\(processes.logs())")
            #expect(try await stats("failed-attempts", connection) == 0)
            #expect(try await deadLetters(connection).isEmpty)
        }

        /// Once ingest and the receiver are up: the healthy network registered, posting to the receiver.
        func registerHealthy(_ processes: PipelineProcesses) async throws {
            for url in [processes.ingestURL, processes.receiverURL] {
                try #require(try await http.waitUntilUp("\(url)/health"), "\(url) starts\n\(processes.logs())")
            }
            let reply = try await http.send(
                "PUT", "\(processes.adminURL)/v1/admin/ad-networks/\(healthy)",
                json: [
                    "public-key": SigningKey.generate().publicKey.pemRepresentation,
                    "postback-url": "\(processes.receiverURL)/postbacks",
                ],
                token: processes.adminToken)
            try #require(reply.status == 200)
        }

        func accepted(_ receiver: String) async throws -> [DeliveryTests.Attempt] {
            let reply = try await http.send("GET", "\(receiver)/attempts")
            return try JSONDecoder().decode([DeliveryTests.Attempt].self, from: reply.body).filter(\.accepted)
        }

        /// A `dispatcher:stats` field summed over the partitions.
        func stats(_ field: String, _ connection: RedisConnection) async throws -> Int {
            let replies = try await connection.pipeline(
                StageKeys.dispatcherStats.all(testPartitioning).map { RedisCommand("HGET", $0, field) })
            return replies.reduce(0) { $0 + Int($1.string ?? "0")! }
        }

        func deadLetters(_ connection: RedisConnection) async throws -> [String] {
            try await streamRecords(StreamNames.deliveriesDead, on: connection).compactMap { $0.text("postback-identifier") }
        }
    }
}
