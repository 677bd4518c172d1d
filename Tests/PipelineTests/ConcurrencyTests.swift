import AttributionCrypto
import AttributionModel
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceRuntime
import TestSupport
import Testing

extension PipelineSuites {
    /// Two attribution-winner replicas on the same devices at once: optimistic transactions (WATCH on the
    /// device state) must never let both attribute one install, nor lose an update.
    @Suite("Concurrent attribution-winner replicas", .serialized)
    struct ConcurrencyTests {
        let http = HTTPTestClient()

        @Test func racingReplicasAttributeEachInstallOnceAndKeepEveryUpdate() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            // One message per read, so the two replicas interleave as much as they can.
            let pipeline = try PipelineProcesses(redis: redis, timeScale: 1, extraEnvironment: ["BATCH_SIZE": "1"])
            defer { pipeline.stop() }
            try pipeline.start("attribution-winner-2", executable: "attribution-winner", port: try freeLoopbackPort())
            #expect(try await http.waitUntilUp("\(pipeline.ingestURL)/health"), "ingest starts\n\(pipeline.logs())")

            let network = "race.adattributionkit"
            let key = SigningKey.generate()
            let app: ItemIdentifier = 99
            let publisher: ItemIdentifier = 98
            let appKey = try await pipeline.registerCampaign(
                network: network, publicKeyPEM: key.publicKey.pemRepresentation, publisher: publisher, app: app, http: http)

            let devices = (0..<40).map { "racer-\($0)" }
            let connection = redis.connect()
            let start = Milliseconds(Date().timeIntervalSince1970 * 1000)
            for (n, device) in devices.enumerated() {
                let payload = ImpressionPayload(
                    impressionIdentifier: UUID().uuidString, adNetworkIdentifier: AdNetworkIdentifier(network)!,
                    advertisedItemIdentifier: app, publisherItemIdentifier: publisher, sourceIdentifier: n, timestamp: start)
                let jws = try CompactJWS.sign(payload: JSONCoding.encoder.encode(payload), keyID: network, with: key)
                _ = try await http.send(
                    "POST", "\(pipeline.ingestURL)/v1/impressions",
                    json: [
                        "device-identifier": device, "impression": jws,
                        "interaction": ["type": "click", "time": start, "loaded-at": start],
                    ])
            }
            let impressionsIn = try await eventually(timeout: .seconds(15)) {
                try await streamLength(StreamNames.verified, on: connection) >= devices.count
            }
            try #require(impressionsIn, "\(pipeline.logs())")
            try await Task.sleep(for: .milliseconds(500))  // both replicas have stored every impression

            // Each install reported twice at once, then three updates each, all fired concurrently.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for device in devices {
                    for copy in 0..<2 {
                        group.addTask {
                            _ = try await http.send(
                                "POST", "\(pipeline.ingestURL)/v1/conversions",
                                json: [
                                    "device-identifier": device, "advertised-item-identifier": app, "conversion-type": "download",
                                    "time": start + 1_000 + Milliseconds(copy),
                                ], token: appKey)
                        }
                    }
                }
                try await group.waitForAll()
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for device in devices {
                    for value in 1...3 {
                        group.addTask {
                            _ = try await http.send(
                                "POST", "\(pipeline.ingestURL)/v1/conversion-value-updates",
                                json: [
                                    "device-identifier": device, "advertised-item-identifier": app,
                                    "time": start + 2_000 + Milliseconds(value),
                                    "fineConversionValue": value,
                                ], token: appKey)
                        }
                    }
                }
                try await group.waitForAll()
            }

            func attributions() async throws -> [MessageBody] {
                try await streamRecords(StreamNames.attributions, on: connection).map {
                    try Envelope.decode(Array(try #require($0.message).utf8)).body
                }
            }
            let settled = try await eventually(timeout: .seconds(20), every: .milliseconds(200)) {
                let pending = try await pendingCount(StreamNames.verified, group: "attribution-winner", on: connection)
                return try await streamLength(StreamNames.verified, on: connection) == devices.count * 6 && pending == 0
            }
            try #require(settled, "\(pipeline.logs())")
            try await Task.sleep(for: .milliseconds(500))
            let bodies = try await attributions()
            var conversionsPerTime: [Milliseconds: Int] = [:]
            var updates: [String: Int] = [:]
            for body in bodies {
                switch body {
                case .conversionAttributed(let a): conversionsPerTime[a.conversionTime, default: 0] += 1
                case .updateAttributed(let u): updates[u.conversionIdentifier, default: 0] += 1
                default: break
                }
            }
            let attributed = bodies.compactMap { if case .conversionAttributed(let a) = $0 { a } else { nil } }
            #expect(attributed.count == devices.count, "one conversion per device's install, not two")
            #expect(Set(attributed.map(\.winner.impressionIdentifier)).count == devices.count, "each impression won once")
            #expect(updates.values.reduce(0, +) == devices.count * 3, "every update reached its conversion")
            #expect(Set(updates.keys) == Set(attributed.map(\.conversionIdentifier)))
            #expect(try await streamLength(ConsumerGroups.attributionWinner.deadLetterStream, on: connection) == 0)
        }
    }
}
