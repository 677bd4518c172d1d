import AttributionCrypto
import AttributionModel
import Foundation
import RedisStreams
import ServiceRuntime
import TestSupport
import Testing

extension PipelineSuites {
    /// A re-engagement's answer on the real pipeline: the open URL with `AdAttributionKitReengagementOpen`
    /// whether or not a conversion is created, and with `Prefer: wait` which it was and why, as
    /// attribution-winner decided (`winner:outcomes:*`, read by ingest under its own ACL user).
    @Suite("Re-engagement answers: the open URL, and the outcome when asked to wait", .serialized)
    struct ReengagementAnswerTests {
        static let app: ItemIdentifier = 1_300_000_054
        static let publisher: ItemIdentifier = 5_838_492
        static let url = "https://app.example.com/offer?ref=spring"
        let http = HTTPTestClient()

        static func now() -> Milliseconds { Milliseconds(Date().timeIntervalSince1970 * 1000) }

        @Test func theAnswerOpensTheURLAndSaysWhetherAConversionWasCreated() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            let pipeline = try PipelineProcesses(
                redis: redis, timeScale: 1, extraEnvironment: ["CONVERSION_SETTLE_MS": "200"],
                only: ["ingest", "verifier", "attribution-winner"])
            defer { pipeline.stop() }
            try #require(try await http.waitUntilUp("\(pipeline.ingestURL)/health"), "ingest starts\n\(pipeline.logs())")
            let network = "reengage.adattributionkit"
            let key = SigningKey.generate()
            let appKey = try await pipeline.registerCampaign(
                network: network, publicKeyPEM: key.publicKey.pemRepresentation, publisher: Self.publisher, app: Self.app,
                http: http)
            let device = "device-\(UUID().uuidString)"
            let t0 = Self.now()
            for n in 0..<3 {
                let payload = ImpressionPayload(
                    impressionIdentifier: UUID().uuidString, adNetworkIdentifier: AdNetworkIdentifier(network)!,
                    advertisedItemIdentifier: Self.app, publisherItemIdentifier: Self.publisher, sourceIdentifier: 100 + n,
                    timestamp: t0 - 5_000, eligibleForReengagement: true)
                let jws = try CompactJWS.sign(payload: JSONCoding.encoder.encode(payload), keyID: network, with: key)
                let reply = try await http.send(
                    "POST", "\(pipeline.ingestURL)/v1/impressions",
                    json: [
                        "device-identifier": device, "impression": jws,
                        "interaction": ["type": "click", "loaded-at": t0 - 4_000, "time": t0 - 3_000 + Milliseconds(n)],
                    ])
                try #require(reply.status == 202, "impression: \(String(decoding: reply.body, as: UTF8.self))")
            }

            func reengage(
                _ device: String, at time: Milliseconds, url: String? = Self.url, prefer: String? = "wait=10",
                idempotencyKey: String? = nil
            ) async throws -> HTTPTestClient.Reply {
                var body: [String: Any] = [
                    "device-identifier": device, "advertised-item-identifier": Self.app, "conversion-type": "re-engagement",
                    "time": time,
                ]
                if let url { body["reengagement-url"] = url }
                let data = try JSONSerialization.data(withJSONObject: body, options: .sortedKeys)
                return try await http.send(
                    HTTPClientRequestBuilder(
                        method: "POST", url: "\(pipeline.ingestURL)/v1/conversions", body: String(decoding: data, as: UTF8.self),
                        token: appKey, contentType: "application/json", idempotencyKey: idempotencyKey, prefer: prefer))
            }
            func expectAnswer(
                _ reply: HTTPTestClient.Reply, conversion: String?, reason: String? = nil, _ comment: String
            ) {
                let text = String(decoding: reply.body, as: UTF8.self)
                #expect(reply.status == 202, "\(comment): \(text)")
                let tag = reply.json["conversion-tag"] as? String ?? "?"
                #expect(
                    reply.json["open-url"] as? String == "\(Self.url)&AdAttributionKitReengagementOpen=\(tag)",
                    "\(comment): \(text)")
                #expect(reply.json["conversion"] as? String == conversion, "\(comment): \(text)")
                #expect(reply.json["reason"] as? String == reason, "\(comment): \(text)")
                #expect(reply.preferenceApplied == (conversion == nil ? nil : "wait=10"), "\(comment): Preference-Applied")
            }

            // Two re-engagements of the app in 30 days are conversions; the third, with an eligible click
            // left, is capped, and its answer still opens the URL with its tag.
            expectAnswer(try await reengage(device, at: t0), conversion: "created", "the first re-engagement")
            expectAnswer(try await reengage(device, at: t0 + 1), conversion: "created", "the second re-engagement")
            let capped = try await reengage(device, at: t0 + 2, idempotencyKey: "third")
            expectAnswer(capped, conversion: "not-created", reason: "re-engagement-app-cap", "the third re-engagement")
            // A retry with the same key within the minute the outcome is kept: the same tag, the same answer.
            let retried = try await reengage(device, at: t0 + 2, idempotencyKey: "third")
            expectAnswer(retried, conversion: "not-created", reason: "re-engagement-app-cap", "the third, retried")
            #expect(retried.json["conversion-tag"] as? String == capped.json["conversion-tag"] as? String)

            // A device with no impression: no eligible impression, the URL opened all the same.
            let organic = try await reengage("device-\(UUID().uuidString)", at: t0 + 3)
            expectAnswer(organic, conversion: "not-created", reason: "no-eligible-impression", "a device with no impression")

            // Without `Prefer`, the answer does not wait and says nothing of the outcome.
            let started = ContinuousClock.now
            expectAnswer(try await reengage(device, at: t0 + 4, prefer: nil), conversion: nil, "without Prefer")
            #expect(ContinuousClock.now - started < .milliseconds(200 * 5), "an answer without Prefer does not wait")
            // Without a URL: the outcome, no open URL.
            let bare = try await reengage(device, at: t0 + 5, url: nil)
            #expect(bare.json["open-url"] == nil)
            #expect(bare.json["conversion"] as? String == "not-created")

            // A URL that is not an https universal link is refused, before anything reaches the pipeline.
            let refused = try await reengage(device, at: t0 + 6, url: "myapp://offer")
            #expect(refused.status == 400)
            #expect(refused.json["reason"] as? String == "invalid-reengagement-url")

            // A batch item gives its open URL too.
            let item: [String: Any] = [
                "device-identifier": device, "advertised-item-identifier": Self.app, "conversion-type": "re-engagement",
                "time": t0 + 7, "reengagement-url": "https://app.example.com/?AdAttributionKitReengagementOpen=old#top",
            ]
            let batch = try await http.send(
                "POST", "\(pipeline.ingestURL)/v1/conversions/batch", json: [item], token: appKey)
            let result = (batch.json["results"] as? [[String: Any]])?.first ?? [:]
            let tag = result["conversion-tag"] as? String ?? "?"
            #expect(
                result["open-url"] as? String == "https://app.example.com/?AdAttributionKitReengagementOpen=\(tag)#top",
                "\(String(decoding: batch.body, as: UTF8.self))")
        }
    }
}
