import AttributionCrypto
import AttributionModel
import Foundation
import TestSupport
import Testing

extension PipelineSuites {
    /// The reference receiver's output file, which the tests, the demo and the benchmark read: one
    /// JSON object a line holding the body and the signed payload as sent, whatever the body's layout
    /// (the receiver splices a one-line body in as received and re-encodes any other).
    @Suite("attribution receiver")
    struct ReceiverOutputTests {
        let http = HTTPTestClient()

        @Test func eachFirstCopyIsOneLineWithItsBodyAndPayload() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            // Ingest publishes the key set the dispatcher registers; nothing else is needed.
            let pipeline = try PipelineProcesses(redis: redis, timeScale: 1, only: ["ingest"])
            defer { pipeline.stop() }
            try pipeline.startDispatcher()
            try #require(try await http.waitUntilUp("\(pipeline.ingestURL)/health"), "ingest started\n\(pipeline.logs())")
            let jwks = "\(pipeline.ingestURL)/.well-known/jwks.json"
            try #require(
                try await eventually(timeout: .seconds(30)) {
                    String(decoding: try await http.send("GET", jwks).body, as: UTF8.self).contains(pipeline.signingKeyID)
                }, "the dispatcher's key is published\n\(pipeline.logs())")
            let port = try freeLoopbackPort()
            try pipeline.start(
                "receiver", executable: "attribution",
                arguments: ["receiver", "--port", String(port), "--jwks-url", jwks, "--output", pipeline.postbackFile.path],
                port: nil)
            let receiver = "http://127.0.0.1:\(port)"
            try #require(try await http.waitUntilUp("\(receiver)/health"), "receiver started\n\(pipeline.logs())")

            let key = try SigningKey.load(file: pipeline.directory.appendingPathComponent("signing.pem").path)
            func body(postbackIdentifier: String) throws -> (payload: Data, body: Data) {
                let payload = PostbackPayload(
                    adNetworkIdentifier: AdNetworkIdentifier("example.adattributionkit")!, sourceIdentifier: "39",
                    advertisedItemIdentifier: 1_108_187_390, publisherItemIdentifier: nil, conversionType: .download,
                    marketplaceIdentifier: PostbackPayload.appStoreMarketplace, postbackIdentifier: postbackIdentifier,
                    postbackSequenceIndex: 0, didWin: true)
                let signed = try JSONCoding.encoder.encode(payload)
                let order = PostbackOrder(
                    payload: payload, adInteractionType: .click, conversionValue: 42, coarseConversionValue: nil,
                    countryCode: "US", isDevelopment: false)
                let jws = try CompactJWS.sign(payload: signed, keyID: pipeline.signingKeyID, with: key)
                return (signed, try JSONCoding.encoder.encode(PostbackBody(order: order, jwsString: jws)))
            }
            // The pipeline's own layout (one line), then a sender that pretty-prints and ends with a newline.
            let compact = try body(postbackIdentifier: UUID().uuidString.lowercased())
            let spread = try body(postbackIdentifier: UUID().uuidString.lowercased())
            let spreadBody =
                try JSONSerialization.data(
                    withJSONObject: JSONSerialization.jsonObject(with: spread.body), options: [.prettyPrinted]) + Data("\n".utf8)
            for (raw, duplicate) in [(compact.body, false), (spreadBody, false), (compact.body, true)] {
                let reply = try await http.send("POST", "\(receiver)/postbacks", raw: String(decoding: raw, as: UTF8.self))
                #expect(reply.status == 200, "\(String(decoding: reply.body, as: UTF8.self))")
                #expect(reply.json["duplicate"] as? Bool == duplicate)
            }

            let text = try String(contentsOf: pipeline.postbackFile, encoding: .utf8)
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.count == 3 && lines.last == "", "two lines, each ended by a newline: \(text)")
            for (line, sent) in zip(lines.prefix(2), [compact, spread]) {
                let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? NSDictionary, "\(line)")
                #expect(object["body"] as? NSDictionary == (try JSONSerialization.jsonObject(with: sent.body) as? NSDictionary))
                #expect(
                    object["payload"] as? NSDictionary == (try JSONSerialization.jsonObject(with: sent.payload) as? NSDictionary))
                #expect(object["kid"] as? String == pipeline.signingKeyID && object["kind"] as? String == "adattributionkit")
                #expect(object["path"] as? String == "/postbacks" && object["duplicate"] as? Bool == false)
                #expect((object["received-at"] as? NSNumber).map { $0.int64Value > 1_700_000_000_000 } == true, "\(line)")
            }
        }
    }
}
