import AttributionCrypto
import AttributionModel
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceRuntime
import TestSupport
import Testing

extension PipelineSuites {
    /// SIGKILL a worker while events flow: a new replica claims what the dead one left pending, and every
    /// event comes out exactly once.
    @Suite("Crash recovery with real processes", .serialized)
    struct CrashRecoveryTests {
        let http = HTTPTestClient()

        @Test func killedVerifierLosesNothingAndDuplicatesNothing() async throws {
            let redis = try await RedisServer.start(appendOnly: true)
            defer { redis.stop() }
            let pipeline = try PipelineProcesses(redis: redis, timeScale: 1)
            defer { pipeline.stop() }
            #expect(try await http.waitUntilUp("\(pipeline.ingestURL)/health"), "ingest starts\n\(pipeline.logs())")

            let network = "crash.adattributionkit"
            let key = SigningKey.generate()
            let publisher: ItemIdentifier = 77
            let app: ItemIdentifier = 88
            try await pipeline.registerCampaign(
                network: network, publicKeyPEM: key.publicKey.pemRepresentation, publisher: publisher, app: app, http: http)

            var identifiers = Set<String>()
            func post(_ count: Int) async throws {
                for _ in 0..<count {
                    let now = Milliseconds(Date().timeIntervalSince1970 * 1000)
                    let id = UUID().uuidString
                    identifiers.insert(id)
                    let payload = ImpressionPayload(
                        impressionIdentifier: id, adNetworkIdentifier: AdNetworkIdentifier(network)!,
                        advertisedItemIdentifier: app,
                        publisherItemIdentifier: publisher, sourceIdentifier: identifiers.count % 10_000, timestamp: now)
                    let jws = try CompactJWS.sign(payload: JSONCoding.encoder.encode(payload), keyID: network, with: key)
                    let reply = try await http.send(
                        "POST", "\(pipeline.ingestURL)/v1/impressions",
                        json: [
                            "device-identifier": "device-\(identifiers.count % 50)", "impression": jws,
                            "interaction": ["type": "click", "loaded-at": now, "time": now],
                        ])
                    #expect(reply.status == 202)
                }
            }
            let watcher = redis.connect()
            func pendingCount() async throws -> Int64 {
                Int64(try await PipelineTests.pendingCount(StreamNames.events, group: "verifier", on: watcher))
            }

            try await post(200)
            // Freeze the verifier while it is blocked in XREADGROUP: Redis still hands it the next batch, which it
            // can then never acknowledge. Stopped between two reads it gets nothing, so thaw and try again.
            var holdsBatch = false
            for _ in 0..<50 where !holdsBatch {
                pipeline.signal("verifier", SIGSTOP)
                try await post(10)
                try await Task.sleep(for: .milliseconds(20))
                holdsBatch = try await pendingCount() > 0
                if !holdsBatch {
                    pipeline.signal("verifier", SIGCONT)
                    try await Task.sleep(for: .milliseconds(Int.random(in: 1...30)))
                }
            }
            try #require(holdsBatch, "the frozen verifier holds an unacknowledged batch")
            // Killed in the middle of that batch: no chance to finish or acknowledge it.
            pipeline.kill("verifier")
            try await post(100)
            // A new replica (new pid, new consumer name) joins the group and claims the dead one's entries.
            try pipeline.start("verifier", port: try freeLoopbackPort())
            try await post(100)
            let total = identifiers.count

            let connection = redis.connect()
            let done = try await eventually(timeout: .seconds(30), every: .milliseconds(100)) {
                try await streamLength(StreamNames.verified, on: connection) >= total
            }
            try #require(done, "every impression verified\n\(pipeline.logs())")
            try await Task.sleep(for: .milliseconds(1_500))  // a duplicate would show up by now

            var verified: [String] = []
            for record in try await streamRecords(StreamNames.verified, on: connection) {
                if case .impressionVerified(let impression) = try Envelope.decode(Array(try #require(record.message).utf8)).body {
                    verified.append(impression.payload.impressionIdentifier)
                }
            }
            #expect(verified.count == total, "each impression verified once")
            #expect(Set(verified) == identifiers, "none lost")
            #expect(try await streamLength(StreamNames.rejected, on: connection) == 0, "none refused as a replay")
            let pending = try await PipelineTests.pendingCount(StreamNames.events, group: "verifier", on: connection)
            #expect(pending == 0, "nothing left pending")
        }
    }
}
