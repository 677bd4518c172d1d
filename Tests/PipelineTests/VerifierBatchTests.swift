import AttributionModel
import CryptoPrimitives
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceRuntime
import TestSupport
import Testing

extension PipelineSuites {
    /// The verifier decides a whole batch at once: what one event of the batch does must not wrongly
    /// decide another.
    @Suite("Verifier batches")
    struct VerifierBatchTests {
        let http = HTTPTestClient()

        /// Waits for ingest, then registers HostileInputTests' network (with `networkKey`), publisher and app.
        /// A Redis and ingest with the test network registered under `key`: where each test here starts.
        func registeredIngest(networkKey key: P256.Signing.PrivateKey) async throws -> (RedisServer, PipelineProcesses) {
            let redis = try await RedisServer.start()
            let ingest = try PipelineProcesses(redis: redis, timeScale: 1, only: ["ingest"], inProcess: true)
            do {
                try await register(on: ingest, networkKey: key)
            } catch {
                ingest.stop()
                redis.stop()
                throw error
            }
            return (redis, ingest)
        }

        func register(on ingest: PipelineProcesses, networkKey key: P256.Signing.PrivateKey) async throws {
            try #require(try await http.waitUntilUp("\(ingest.ingestURL)/health"), "ingest started\n\(ingest.logs())")
            for (path, json) in [
                (
                    "ad-networks/\(HostileInputTests.network)",
                    ["public-key": key.publicKey.pemRepresentation, "postback-url": "https://example.com/p"] as [String: Any]
                ),
                ("publisher-apps/\(HostileInputTests.publisher)", ["AdNetworkIdentifiers": [HostileInputTests.network]]),
                ("advertised-apps/\(HostileInputTests.app)", [:]),
            ] {
                let reply = try await http.send(
                    "PUT", "\(ingest.adminURL)/v1/admin/\(path)", json: json, token: ingest.adminToken)
                try #require(reply.status == 200, "\(path): \(reply.json)")
            }
        }

        /// Two reports of one impression in one batch: the first is verified and claims the impression,
        /// the second is refused as a replay (the claim of an event of the same batch is not a replay
        /// of the first).
        @Test func oneImpressionReportedTwiceInOneBatchIsVerifiedOnce() async throws {
            let key = P256.Signing.PrivateKey()
            let (redis, ingest) = try await registeredIngest(networkKey: key)
            defer { redis.stop() }
            defer { ingest.stop() }
            let body = HostileInputTests.impressionBody(
                HostileInputTests.jws(
                    header: #"{"alg":"ES256","kid":"\#(HostileInputTests.network)"}"#, payload: HostileInputTests.payload(),
                    key: key),
                device: "twice-device")
            for _ in 0..<2 {
                let reply = try await http.send(
                    HTTPClientRequestBuilder(method: "POST", url: "\(ingest.ingestURL)/v1/impressions", body: body))
                try #require(reply.status == 202, "\(reply.json)")
            }

            // Both wait on the device's partition; the verifier starts now and reads them as one batch.
            let verifier = try PipelineProcesses(redis: redis, timeScale: 1, only: ["verifier"], inProcess: true)
            defer { verifier.stop() }
            let connection = redis.connect()
            let decided = try await eventually(timeout: .seconds(20)) {
                try await streamLength(StreamNames.verified, on: connection) + streamLength(StreamNames.rejected, on: connection)
                    >= 2
            }
            try #require(decided, "both decided\n\(verifier.logs())")
            #expect(try await streamLength(StreamNames.verified, on: connection) == 1, "the first is verified")
            let rejected = try await streamRecords(StreamNames.rejected, on: connection).compactMap(\.message)
            #expect(rejected.count == 1 && rejected[0].contains("impression-replayed"), "\(rejected)")
        }

        /// A failover can discard an impression's stream entry and `Idempotency-Key` record (written on a
        /// primary, not yet replicated) after the verifier claimed its replay marker on another node. The
        /// client's retry with the same key and body is then written again; it has the first copy's event
        /// id (the key and the bytes make it), so the marker, held by that id, lets it pass instead of
        /// refusing it as a replay of itself, for as long as an `Idempotency-Key` is remembered.
        @Test func aKeyedRetryWhoseFirstCopyWasLostIsNotAReplay() async throws {
            let key = P256.Signing.PrivateKey()
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            // One set of processes: each set gives the services' ACL users new passwords.
            let ingest = try PipelineProcesses(redis: redis, timeScale: 1, only: ["ingest", "verifier"], inProcess: true)
            defer { ingest.stop() }
            try await register(on: ingest, networkKey: key)
            let verifier = ingest
            let connection = redis.connect()
            let signed = HostileInputTests.jws(
                header: #"{"alg":"ES256","kid":"\#(HostileInputTests.network)"}"#, payload: HostileInputTests.payload(),
                key: key)
            let body = HostileInputTests.impressionBody(signed, device: "retried-device")
            func post(_ body: String, key: String) async throws -> String {
                let reply = try await http.send(
                    HTTPClientRequestBuilder(
                        method: "POST", url: "\(ingest.ingestURL)/v1/impressions", body: body, idempotencyKey: key))
                try #require(reply.status == 202, "\(reply.json)\n\(ingest.logs())")
                return try #require(reply.json["event-identifier"] as? String)
            }
            func decided(_ count: Int) async throws {
                let done = try await eventually(timeout: .seconds(20)) {
                    try await streamLength(StreamNames.verified, on: connection)
                        + streamLength(StreamNames.rejected, on: connection) >= count
                }
                try #require(done, "\(count) decided\n\(verifier.logs())")
            }

            let first = try await post(body, key: "retry-1")
            try await decided(1)
            // The failover's loss: the record is gone (the verified entry is left; nothing reads it here).
            let records = try await connection.send(RedisCommand("SCAN", "0", "MATCH", "ingest:idempotency:*", "COUNT", "10000"))
            let names = (records.elements.dropFirst().first?.elements ?? []).compactMap(\.string)
            try #require(names.count == 1, "one idempotency record: \(names)")
            _ = try await connection.send(RedisCommand("DEL", names[0]))

            #expect(try await post(body, key: "retry-1") == first, "the retry is the same event")
            try await decided(2)
            #expect(try await streamLength(StreamNames.verified, on: connection) == 2)
            #expect(try await streamLength(StreamNames.rejected, on: connection) == 0)

            // The same request sent again over a day later (its record expired, the marker claimed 25 h
            // ago) is a replay: an impression that won once must not come back to win again.
            let markers = try await connection.send(RedisCommand("SCAN", "0", "MATCH", "verifier:seen:*", "COUNT", "10000"))
            let markerNames = (markers.elements.dropFirst().first?.elements ?? []).compactMap(\.string)
            try #require(markerNames.count == 1, "one replay marker: \(markerNames)")
            let marker = markerNames[0]
            let dayAgo = WallClock.nowMilliseconds() - 25 * 3_600_000
            _ = try await connection.send(
                RedisCommand("SET", marker, VerifierStep.markerValue(event: first, claimedAt: dayAgo), "KEEPTTL"))
            _ = try await connection.send(RedisCommand("DEL", names[0]))
            #expect(try await post(body, key: "retry-1") == first)
            try await decided(3)
            let rejected = try await streamRecords(StreamNames.rejected, on: connection).compactMap(\.message)
            #expect(rejected.count == 1 && rejected[0].contains("impression-replayed"), "\(rejected)")
        }

        /// `CONSUMERS=2`: one replica reads as two consumers of the group (`<name>` and
        /// `<name>/1`, each with half the partitions), and every impression is still decided once.
        /// (Redis lists a consumer only once it was handed an entry; batches of 20 over 300 impressions
        /// of 300 devices give both loops some.)
        @Test func twoConsumerLoopsOfOneReplicaShareTheWork() async throws {
            let key = P256.Signing.PrivateKey()
            let (redis, ingest) = try await registeredIngest(networkKey: key)
            defer { redis.stop() }
            defer { ingest.stop() }
            for request in 0..<3 {
                let items = (0..<100).map { index in
                    HostileInputTests.impressionBody(
                        HostileInputTests.jws(
                            header: #"{"alg":"ES256","kid":"\#(HostileInputTests.network)"}"#,
                            payload: HostileInputTests.payload(), key: key),
                        device: "loops-device-\(request)-\(index)")
                }
                let reply = try await http.send(
                    HTTPClientRequestBuilder(
                        method: "POST", url: "\(ingest.ingestURL)/v1/impressions/batch", body: "[\(items.joined(separator: ","))]"
                    ))
                #expect(reply.status == 200, "\(reply.json)")
            }
            let verifier = try PipelineProcesses(
                redis: redis, timeScale: 1, extraEnvironment: ["CONSUMERS": "2", "BATCH_SIZE": "20"], only: ["verifier"],
                inProcess: true)
            defer { verifier.stop() }
            let connection = redis.connect()
            let decided = try await eventually(timeout: .seconds(30)) {
                try await streamLength(StreamNames.verified, on: connection) >= 300
            }
            try #require(decided, "all verified\n\(verifier.logs())")
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await streamLength(StreamNames.verified, on: connection) == 300, "each once")
            #expect(try await streamLength(StreamNames.rejected, on: connection) == 0)
            var names: Set<String> = []
            for name in StreamNames.events.all(testPartitioning) {
                let reply = try await connection.send(RedisCommand("XINFO", "CONSUMERS", name, ConsumerGroups.verifier.name))
                names.formUnion(reply.elements.compactMap { $0.elements.count > 1 ? $0.elements[1].string : nil })
            }
            #expect(names.count == 2 && names.contains { names.contains($0 + "/1") }, "\(names)")
        }

        /// A batch's signature checks split over several threads (`VERIFIER_THREADS`) decide each
        /// impression as one thread would: 60 impressions of one device (one partition, so one batch),
        /// every other one signed with a stranger's key; each verdict belongs to its own event.
        @Test func aBatchCheckedOnSeveralThreadsDecidesEachImpressionOnItsOwn() async throws {
            let key = P256.Signing.PrivateKey()
            let stranger = P256.Signing.PrivateKey()
            let (redis, ingest) = try await registeredIngest(networkKey: key)
            defer { redis.stop() }
            defer { ingest.stop() }
            var genuine: Set<String> = []
            var forged: Set<String> = []
            for index in 0..<60 {
                let body = HostileInputTests.impressionBody(
                    HostileInputTests.jws(
                        header: #"{"alg":"ES256","kid":"\#(HostileInputTests.network)"}"#, payload: HostileInputTests.payload(),
                        key: index.isMultiple(of: 2) ? key : stranger),
                    device: "threads-device")
                let reply = try await http.send(
                    HTTPClientRequestBuilder(method: "POST", url: "\(ingest.ingestURL)/v1/impressions", body: body))
                let id = try #require(reply.json["event-identifier"] as? String, "\(reply.json)")
                if index.isMultiple(of: 2) { genuine.insert(id) } else { forged.insert(id) }
            }
            let verifier = try PipelineProcesses(
                redis: redis, timeScale: 1, extraEnvironment: ["VERIFIER_THREADS": "4"], only: ["verifier"], inProcess: true)
            defer { verifier.stop() }
            let connection = redis.connect()
            let decided = try await eventually(timeout: .seconds(20)) {
                try await streamLength(StreamNames.verified, on: connection) + streamLength(StreamNames.rejected, on: connection)
                    >= 60
            }
            try #require(decided, "all decided\n\(verifier.logs())")
            let verified = try await streamRecords(StreamNames.verified, on: connection).compactMap(\.message)
            let rejected = try await streamRecords(StreamNames.rejected, on: connection).compactMap(\.message)
            #expect(verified.count == 30 && rejected.count == 30)
            #expect(verified.allSatisfy { message in genuine.contains { message.contains($0) } }, "only genuine ones verified")
            #expect(
                rejected.allSatisfy { message in message.contains("invalid-signature") && forged.contains { message.contains($0) }
                },
                "each forged one refused for its signature")
        }

        /// A conversion attribution-winner refuses (no eligible impression) is listed for its app, like
        /// the verifier's refusals of the app's events, so the app sees every refusal in one place.
        @Test func aConversionTheWinnerRefusesIsInTheAppsRefusalList() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            let pipeline = try PipelineProcesses(
                redis: redis, timeScale: 86_400, extraEnvironment: ["CONVERSION_SETTLE_MS": "100"],
                only: ["ingest", "verifier", "attribution-winner"], inProcess: true)
            defer { pipeline.stop() }
            try #require(try await http.waitUntilUp("\(pipeline.ingestURL)/health"), "ingest started\n\(pipeline.logs())")
            let app = HostileInputTests.app
            let reply = try await http.send(
                "PUT", "\(pipeline.adminURL)/v1/admin/advertised-apps/\(app)", json: [:], token: pipeline.adminToken)
            try #require(reply.status == 200, "\(reply.json)")
            let appKey = try #require(
                try await http.send(
                    "POST", "\(pipeline.adminURL)/v1/admin/advertised-apps/\(app)/keys", token: pipeline.adminToken
                )
                .json["app-key"] as? String)
            let install = try await http.send(
                "POST", "\(pipeline.ingestURL)/v1/conversions",
                json: [
                    "device-identifier": "never-saw-an-ad", "advertised-item-identifier": app, "conversion-type": "download",
                    "time": HostileInputTests.now(),
                ], token: appKey)
            try #require(install.status == 202, "\(install.json)")
            let id = try #require(install.json["event-identifier"] as? String)
            let listed = try await eventually(timeout: .seconds(20), every: .milliseconds(100)) {
                let list = try await http.send(
                    "GET", "\(pipeline.adminURL)/v1/admin/advertised-apps/\(app)/rejections", token: pipeline.adminToken)
                return (list.json["rejections"] as? [[String: Any]] ?? []).contains {
                    $0["event-identifier"] as? String == id && $0["reason"] as? String == "no-eligible-impression"
                }
            }
            #expect(listed, "refused by attribution-winner and listed for the app\n\(pipeline.logs())")
        }
    }
}
