import AttributionCrypto
import AttributionModel
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceRuntime
import TestSupport
import Testing

extension PipelineSuites {
    /// Operations as real processes: SIGTERM during a load run, scaling a stage up and down, and the
    /// operator's views (`attribution status`, the pipeline gauges on `/metrics`).
    @Suite("Operations: graceful stops, scaling, status", .serialized)
    struct OperationsTests {
        static let app: ItemIdentifier = 1_400_000_001
        let http = HTTPTestClient()

        final class Load: @unchecked Sendable {
            let network = "ops.adattributionkit"
            let key = SigningKey.generate()
            var impressions = Set<String>()
            var postbacks = Set<String>()
        }

        func start(_ scale: Double = 172_800) async throws -> (RedisServer, PipelineProcesses, Load) {
            let redis = try await RedisServer.start(appendOnly: true)
            let pipeline = try PipelineProcesses(redis: redis, timeScale: scale)
            try #require(try await http.waitUntilUp("\(pipeline.ingestURL)/health"), "ingest starts\n\(pipeline.logs())")
            try #require(try await http.waitUntilUp("\(pipeline.receiverURL)/health"), "receiver starts")
            let load = Load()
            _ = try await pipeline.registerCampaign(
                network: load.network, publicKeyPEM: load.key.publicKey.pemRepresentation, publisher: 77, app: Self.app,
                http: http)
            return (redis, pipeline, load)
        }

        /// Impressions through ingest (verifier, attribution-winner) and due postbacks straight onto
        /// `postbacks` (dispatcher).
        func push(_ count: Int, _ load: Load, _ pipeline: PipelineProcesses, _ connection: RedisConnection) async throws {
            var releases: [RedisCommand] = []
            for index in 0..<count {
                let now = Milliseconds(Date().timeIntervalSince1970 * 1000)
                let id = UUID().uuidString
                load.impressions.insert(id)
                let payload = ImpressionPayload(
                    impressionIdentifier: id, adNetworkIdentifier: AdNetworkIdentifier(load.network)!,
                    advertisedItemIdentifier: Self.app,
                    publisherItemIdentifier: 77, sourceIdentifier: index % 10_000, timestamp: now)
                let reply = try await http.send(
                    "POST", "\(pipeline.ingestURL)/v1/impressions",
                    json: [
                        "device-identifier": "ops-device-\(index % 40)",
                        "impression": try CompactJWS.sign(
                            payload: JSONCoding.encoder.encode(payload), keyID: load.network, with: load.key),
                        "interaction": ["type": "click", "loaded-at": now, "time": now],
                    ])
                #expect(reply.status == 202)
                let order = DeliveryTests.order(network: load.network)
                load.postbacks.insert(order.payload.postbackIdentifier)
                releases.append(
                    StreamCommands.add(
                        StreamNames.postbacks(testPartitioning[0]), message: CompactHeldPostback.encode(order, dueAt: now)))
            }
            _ = try await connection.pipeline(releases)
        }

        /// Every impression verified once, every postback received once, nothing pending anywhere.
        func expectNothingLost(_ load: Load, _ pipeline: PipelineProcesses, _ connection: RedisConnection) async throws {
            let done = try await eventually(timeout: .seconds(40), every: .milliseconds(200)) {
                try await streamLength(StreamNames.verified, on: connection) >= load.impressions.count
                    && pipeline.receivedPostbacks().count >= load.postbacks.count
            }
            #expect(done, "everything through\n\(pipeline.logs())")
            try await Task.sleep(for: .milliseconds(1_500))  // a duplicate would show up by now
            var verified: [String] = []
            for record in try await streamRecords(StreamNames.verified, on: connection) {
                if case .impressionVerified(let impression) = try Envelope.decode(try #require(record.fields["e"])).body {
                    verified.append(impression.payload.impressionIdentifier)
                }
            }
            #expect(
                verified.count == load.impressions.count && Set(verified) == load.impressions, "each impression verified once")
            let received = pipeline.receivedPostbacks().compactMap {
                ($0["payload"] as? [String: Any])?["postback-identifier"] as? String
            }
            #expect(received.count == load.postbacks.count && Set(received) == load.postbacks, "each postback received once")
            for (stream, group) in [
                (StreamNames.events, "verifier"), (StreamNames.verified, "attribution-winner"),
                (StreamNames.postbacks, "dispatcher"),
            ] {
                let pending = try await pendingCount(stream, group: group, on: connection)
                #expect(pending == 0, "nothing pending on \(stream)")
            }
        }

        /// SIGTERM to each worker in turn while events flow: each stops reading, finishes and
        /// acknowledges its batch, and exits well within compose's 30 s grace period; nothing is lost.
        @Test func sigtermStopsEachWorkerWithinTheGracePeriodAndLosesNothing() async throws {
            let (redis, pipeline, load) = try await start()
            defer {
                pipeline.stop()
                redis.stop()
            }
            let connection = redis.connect()
            for worker in ["verifier", "attribution-winner", "scheduler", "dispatcher"] {
                async let flowing: Void = push(60, load, pipeline, connection)
                try await Task.sleep(for: .milliseconds(150))
                let stopped = try #require(pipeline.stopGracefully(worker))
                print("OperationsTests: \(worker) exited \(stopped.status) \(stopped.elapsed) after SIGTERM")
                #expect(stopped.status == 0, "\(worker) exits cleanly")
                #expect(stopped.elapsed < .seconds(10), "\(worker) exits within the grace period")
                try await flowing
                if worker == "dispatcher" {
                    try pipeline.startDispatcher()
                } else {
                    try pipeline.start(worker, port: try freeLoopbackPort())
                }
            }
            try await push(40, load, pipeline, connection)
            try await expectNothingLost(load, pipeline, connection)
        }

        /// The verifier scaled from 1 to 3 replicas and back to 1 during a run: the consumer group
        /// shares the work, stopped replicas finish theirs, nothing is lost or verified twice.
        @Test func scalingAStageUpAndDownLosesAndDuplicatesNothing() async throws {
            let (redis, pipeline, load) = try await start()
            defer {
                pipeline.stop()
                redis.stop()
            }
            let connection = redis.connect()
            try await push(60, load, pipeline, connection)
            for replica in ["verifier-2", "verifier-3"] {
                try pipeline.start(replica, executable: "verifier", port: try freeLoopbackPort())
            }
            try await push(120, load, pipeline, connection)
            // A replica joins the group with its first read, once its process is up (slower on a busy machine).
            let joined = try await eventually {
                try await PipelineSnapshot.read(on: connection, testPartitioning, at: WallClock.nowMilliseconds()).groups.first {
                    $0.group == "verifier"
                }?
                .consumers == 3
            }
            #expect(joined, "three verifier replicas in the group")
            async let flowing: Void = push(80, load, pipeline, connection)
            try await Task.sleep(for: .milliseconds(100))
            for replica in ["verifier-2", "verifier-3"] { #expect(pipeline.stopGracefully(replica)?.status == 0) }
            try await flowing
            try await push(40, load, pipeline, connection)
            try await expectNothingLost(load, pipeline, connection)
        }

        /// Where messages wait: `attribution status` (text and JSON) and the gauges on a worker's /metrics,
        /// while the receiver refuses everything and deliveries pile up in the retry queue.
        @Test func statusAndGaugesShowWhereMessagesWait() async throws {
            let (redis, pipeline, load) = try await start(3_600)
            defer {
                pipeline.stop()
                redis.stop()
            }
            let connection = redis.connect()
            _ = try await http.send("POST", "\(pipeline.receiverURL)/control", json: ["fail-share": 1])
            try await push(20, load, pipeline, connection)
            let waiting = try await eventually(timeout: .seconds(15)) {
                try await PipelineSnapshot.read(on: connection, testPartitioning, at: WallClock.nowMilliseconds()).queues.first {
                    $0.name == DelayedQueues.deliveryRetries.name
                }?
                .count == 20
            }
            try #require(waiting, "deliveries wait for their retry\n\(pipeline.logs())")
            // The first retries wait only tens of ms at this scale, so the 20 are briefly back on `postbacks`
            // between two attempts: read the status until it catches them waiting (later waits are seconds).
            var text = ""
            let shown = try await eventually(timeout: .seconds(15), every: .milliseconds(100)) {
                text = try Self.run(["status", "--redis-url", redis.url])
                return text.split(separator: "\n").contains {
                    $0.hasPrefix("delivery retries") && $0.contains(" 20 ") && ($0.contains("  in ") || $0.contains("  now"))
                }
            }
            #expect(text.contains("delivery retries"), "\(text)")
            #expect(shown, "\(text)")
            #expect(text.contains("events") && text.contains("verifier"), "\(text)")
            let json = try JSONSerialization.jsonObject(
                with: Data(try Self.run(["status", "--redis-url", redis.url, "--json"]).utf8))
            let groups = (json as? [String: Any])?["groups"] as? [[String: Any]] ?? []
            #expect(
                Set(groups.compactMap { $0["group"] as? String }).isSuperset(of: ["verifier", "attribution-winner", "dispatcher"])
            )
            let dispatcher = try #require(pipeline.url(of: "dispatcher"))
            let ready = try await http.send("GET", "\(dispatcher)/ready")
            #expect(ready.status == 200, "ready once its consumer group exists: \(ready.json)")
            // A group that vanished (say, its stream was deleted) makes the service not ready.
            _ = try await connection.send(
                RedisCommand("XGROUP", "DESTROY", StreamNames.postbacks(testPartitioning[3]), "dispatcher"))
            let unready = try await http.send("GET", "\(dispatcher)/ready")
            #expect(unready.status == 503 && unready.json["reason"] as? String == "consumer-group-missing")
            let exported = try await eventually(timeout: .seconds(15), every: .milliseconds(500)) {
                let metrics = String(decoding: try await http.send("GET", "\(dispatcher)/metrics").body, as: UTF8.self)
                return metrics.contains(#"pipeline_delayed_items{queue="dispatcher:retries"} 20"#)
                    && metrics.contains(#"pipeline_group_pending{"#) && metrics.contains("dispatcher_deliveries_total{")
                    // Redis's memory, for an alert before a noeviction Redis refuses writes (read as the
                    // dispatcher's own ACL user: INFO is among its rights).
                    && metrics.contains("redis_used_memory_bytes ") && metrics.contains("redis_maxmemory_bytes ")
            }
            #expect(exported, "gauges on /metrics")
        }

        /// Erasing one device removes every key and stream entry that names it; another device's data stays.
        @Test func erasingADeviceLeavesNothingThatNamesIt() async throws {
            let (redis, pipeline, load) = try await start()
            defer {
                pipeline.stop()
                redis.stop()
            }
            let connection = redis.connect()
            try await push(80, load, pipeline, connection)  // devices ops-device-0 … 39, views and clicks
            try #require(
                try await eventually(timeout: .seconds(20)) {
                    try await streamLength(StreamNames.verified, on: connection) >= load.impressions.count
                })
            func mentions(_ device: String) async throws -> [String] {
                var found: [String] = []
                let keys = try await connection.send(RedisCommand("KEYS", "*")).elements.compactMap(\.string)
                for key in keys {
                    if key.hasSuffix(":\(device)") { found.append(key) }
                    let type = try await connection.send(RedisCommand("TYPE", key)).string
                    if type == "stream" {
                        for record in try await streamRecords(key, on: connection)
                        where record.message?.contains("\"\(device)\"") == true {
                            found.append("\(key) \(record.id)")
                        }
                    } else if type == "string", let value = try await connection.send(RedisCommand("GET", key)).string,
                        value.contains("\"\(device)\"")
                    {
                        found.append(key)
                    }
                }
                return found
            }
            #expect(!(try await mentions("ops-device-7")).isEmpty, "the device is known before")
            let erased = try await http.send(
                "DELETE", "\(pipeline.adminURL)/v1/admin/devices/ops-device-7", token: pipeline.adminToken)
            #expect(erased.status == 200 && (erased.json["deleted-keys"] as? Int ?? 0) >= 1, "\(erased.json)")
            #expect(try await mentions("ops-device-7") == [])
            #expect(!(try await mentions("ops-device-8")).isEmpty, "another device's data stays")
            let anonymous = try await http.send("DELETE", "\(pipeline.adminURL)/v1/admin/devices/ops-device-8")
            #expect(anonymous.status == 401)
        }

        /// Erasure matches exactly (never by pattern): a device named like a word every event holds
        /// (`click`) erases nothing of anyone else's; an identifier holding `/` is erased through the
        /// body form, its dead letters too, and a dead letter of another device in the same stream stays.
        @Test func erasureTouchesOnlyTheDeviceItNames() async throws {
            let (redis, pipeline, load) = try await start()
            defer {
                pipeline.stop()
                redis.stop()
            }
            let connection = redis.connect()
            pipeline.kill("verifier")  // the events stay on `events`, unprocessed
            try await push(40, load, pipeline, connection)
            let before = try await streamLength(StreamNames.events, on: connection)
            try #require(before >= 40)
            let click = try await http.send("DELETE", "\(pipeline.adminURL)/v1/admin/devices/click", token: pipeline.adminToken)
            #expect(click.status == 200 && click.json["deleted-entries"] as? Int == 0, "\(click.json)")
            #expect(try await streamLength(StreamNames.events, on: connection) == before, "no other device's event went")

            let partition = testPartitioning.of(device: "tenant/42")
            func deadLetter(_ device: String) throws -> RedisCommand {
                let report = ConversionReport(
                    deviceIdentifier: device, advertisedItemIdentifier: Self.app, conversionType: .download, time: 1,
                    receivedAt: 1)
                return StreamCommands.add(
                    ConsumerGroups.verifier.deadLetterStream(partition),
                    message: try Envelope(time: 1, body: .conversionReported(report)).encoded()
                ).appending("error").appending("test")
            }
            _ = try await connection.pipeline([try deadLetter("tenant/42"), try deadLetter("tenant/42-other")])
            let erased = try await http.send(
                "POST", "\(pipeline.adminURL)/v1/admin/device-erasures", json: ["device-identifier": "tenant/42"],
                token: pipeline.adminToken)
            #expect(erased.status == 200 && erased.json["deleted-entries"] as? Int == 1, "\(erased.json)")
            let left = try await streamRecords(ConsumerGroups.verifier.deadLetterStream(partition), on: connection)
            #expect(left.count == 1 && left.first?.message?.contains("tenant/42-other") == true, "the other device's stays")

            // The path form decodes its segment once: a space, a `/` and non-ASCII are erased by their
            // percent-encoding, not missed.
            let awkward = "tenant 7/é"
            let awkwardStream = ConsumerGroups.verifier.deadLetterStream(testPartitioning.of(device: awkward))
            _ = try await connection.send(
                StreamCommands.add(
                    awkwardStream,
                    message: Envelope(
                        time: 1,
                        body: .conversionReported(
                            ConversionReport(
                                deviceIdentifier: awkward, advertisedItemIdentifier: Self.app, conversionType: .download,
                                time: 1, receivedAt: 1))
                    ).encoded()
                ).appending("error").appending("test"))
            let byPath = try await http.send(
                "DELETE", "\(pipeline.adminURL)/v1/admin/devices/tenant%207%2F%C3%A9", token: pipeline.adminToken)
            #expect(byPath.status == 200 && byPath.json["deleted-entries"] as? Int == 1, "\(byPath.json)")
            #expect(byPath.json["device-identifier"] as? String == awkward)
        }

        static func run(_ arguments: [String], tool: String = "attribution") throws -> String {
            let process = Process()
            process.executableURL = PipelineProcesses.binaryDirectory().appendingPathComponent(tool)
            process.arguments = arguments
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return String(decoding: data, as: UTF8.self)
        }
    }
}
