import AttributionCrypto
import AttributionModel
import CryptoPrimitives
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

        /// Redis, ingest (whose JWKS the dispatcher's key is published to), the dispatcher and a receiver.
        struct Running {
            let redis: RedisServer
            let pipeline: PipelineProcesses
            let port: Int
            let key: P256.Signing.PrivateKey
            var receiver: String { "http://127.0.0.1:\(port)" }

            func stop() {
                pipeline.stop()
                redis.stop()
            }

            /// A postback body as the dispatcher writes it, signed with `keyID` (the published one by default).
            func body(
                postbackIdentifier: String, keyID: String? = nil, signingKey: P256.Signing.PrivateKey? = nil
            ) throws -> (payload: Data, body: Data) {
                let payload = PostbackPayload(
                    adNetworkIdentifier: AdNetworkIdentifier("example.adattributionkit")!, sourceIdentifier: "39",
                    advertisedItemIdentifier: 1_108_187_390, publisherItemIdentifier: nil, conversionType: .download,
                    marketplaceIdentifier: PostbackPayload.appStoreMarketplace, postbackIdentifier: postbackIdentifier,
                    postbackSequenceIndex: 0, didWin: true)
                let signed = try JSONCoding.encoder.encode(payload)
                let order = PostbackOrder(
                    payload: payload, adInteractionType: .click, conversionValue: 42, coarseConversionValue: nil,
                    countryCode: "US", isDevelopment: false)
                let jws = try CompactJWS.sign(payload: signed, keyID: keyID ?? pipeline.signingKeyID, with: signingKey ?? key)
                return (signed, try JSONCoding.encoder.encode(PostbackBody(order: order, jwsString: jws)))
            }
        }

        func start(arguments: [String] = []) async throws -> Running {
            let redis = try await RedisServer.start()
            // Ingest publishes the key set the dispatcher registers; nothing else is needed.
            let pipeline = try PipelineProcesses(redis: redis, timeScale: 1, only: ["ingest"])
            let running: Running
            do {
                try pipeline.startDispatcher()
                running = Running(
                    redis: redis, pipeline: pipeline, port: try freeLoopbackPort(),
                    key: try SigningKey.load(file: pipeline.directory.appendingPathComponent("signing.pem").path))
                try #require(try await http.waitUntilUp("\(pipeline.ingestURL)/health"), "ingest started\n\(pipeline.logs())")
                let jwks = "\(pipeline.ingestURL)/.well-known/jwks.json"
                try #require(
                    try await eventually(timeout: .seconds(30)) {
                        String(decoding: try await http.send("GET", jwks).body, as: UTF8.self).contains(pipeline.signingKeyID)
                    }, "the dispatcher's key is published\n\(pipeline.logs())")
                try pipeline.start(
                    "receiver", executable: "attribution",
                    arguments: [
                        "receiver", "--port", String(running.port), "--jwks-url", jwks, "--output", pipeline.postbackFile.path,
                    ] + arguments,
                    port: nil)
                try #require(
                    try await http.waitUntilUp("\(running.receiver)/health"), "receiver started\n\(pipeline.logs())")
            } catch {
                pipeline.stop()
                redis.stop()
                throw error
            }
            return running
        }

        @Test func eachFirstCopyIsOneLineWithItsBodyAndPayload() async throws {
            let running = try await start()
            defer { running.stop() }
            let (pipeline, receiver) = (running.pipeline, running.receiver)
            func body(postbackIdentifier: String) throws -> (payload: Data, body: Data) {
                try running.body(postbackIdentifier: postbackIdentifier)
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

        /// `--signatures later` (the benchmark's all-five receiver) records a postback whose kid is
        /// published without checking its signature, so a body signed by another key under that kid is
        /// accepted and written as sent, for the reader of the file to verify; `check`, the default,
        /// refuses the same body. A kid the key set lacks is still refused either way.
        @Test(arguments: ["check", "later"])
        func signaturesCheckedNowOrLeftToTheReader(_ signatures: String) async throws {
            let running = try await start(arguments: ["--signatures", signatures])
            defer { running.stop() }
            let forged = try running.body(
                postbackIdentifier: UUID().uuidString.lowercased(), signingKey: P256.Signing.PrivateKey())
            let reply = try await http.send(
                "POST", "\(running.receiver)/postbacks", raw: String(decoding: forged.body, as: UTF8.self))
            let unknownKid = try running.body(postbackIdentifier: UUID().uuidString.lowercased(), keyID: "unknown-kid")
            let refused = try await http.send(
                "POST", "\(running.receiver)/postbacks", raw: String(decoding: unknownKid.body, as: UTF8.self))
            #expect(refused.status == 400 && refused.json["reason"] as? String == "invalid-key", "\(refused.json)")
            let text = (try? String(contentsOf: running.pipeline.postbackFile, encoding: .utf8)) ?? ""
            if signatures == "later" {
                #expect(reply.status == 200, "\(String(decoding: reply.body, as: UTF8.self))")
                let line = try #require(text.split(separator: "\n").first.map { Data($0.utf8) }, "one line: \(text)")
                let object = try #require(try JSONSerialization.jsonObject(with: line) as? NSDictionary)
                #expect(object["body"] as? NSDictionary == (try JSONSerialization.jsonObject(with: forged.body) as? NSDictionary))
                #expect(text.split(separator: "\n").count == 1, "\(text)")
            } else {
                #expect(reply.status == 400 && reply.json["reason"] as? String == "invalid-signature", "\(reply.json)")
                #expect(text.isEmpty, "\(text)")
            }
        }

        /// Postbacks are answered on the event loop (`PostbackFastPath`) when their kid is known and flaky
        /// mode is plain, in a task otherwise (a key set refetch for an unknown kid, a deliberate failure).
        /// Requests pipelined on one connection get their answers in order whichever way each is taken,
        /// and every valid postback shows in `/attempts`.
        @Test func pipelinedRequestsAreAnsweredInOrderOnEveryPath() async throws {
            let running = try await start()
            defer { running.stop() }
            let (first, second) = (UUID().uuidString.lowercased(), UUID().uuidString.lowercased())
            func post(_ body: Data) -> String {
                "POST /postbacks HTTP/1.1\r\nHost: receiver\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n"
                    + String(decoding: body, as: UTF8.self)
            }
            let requests = [
                post(try running.body(postbackIdentifier: first).body),
                "GET /stats HTTP/1.1\r\nHost: receiver\r\n\r\n",
                post(try running.body(postbackIdentifier: UUID().uuidString, keyID: "unknown-kid").body),
                post(try running.body(postbackIdentifier: second).body),
                post(try running.body(postbackIdentifier: first).body),
                post(Data("not json".utf8)),
            ]
            let socket = try #require(RawSocket(port: running.port))
            #expect(socket.transmit(requests.joined()))
            let (text, _) = socket.read(timeout: .seconds(20)) {
                $0.components(separatedBy: "HTTP/1.1 ").count == requests.count + 1 && $0.hasSuffix("}")
            }
            let answers = text.components(separatedBy: "HTTP/1.1 ").dropFirst()
            #expect(answers.map { $0.prefix(3) } == ["200", "200", "400", "200", "200", "400"], "\(text)")
            let expected = [
                "\"duplicate\":false,\"postback-identifier\":\"\(first)\"", "\"accepted\":1", "unknown-kid",
                "\"duplicate\":false,\"postback-identifier\":\"\(second)\"",
                "\"duplicate\":true,\"postback-identifier\":\"\(first)\"", "invalid-components",
            ]
            for (answer, marker) in zip(answers, expected) { #expect(answer.contains(marker), "\(answer)") }

            // Flaky mode on: the next postback's first attempt fails on purpose, its second is accepted.
            let control = try await http.send("POST", "\(running.receiver)/control", json: ["fail-first": 1])
            #expect(control.status == 200)
            let third = try running.body(postbackIdentifier: UUID().uuidString.lowercased()).body
            let statuses = [
                try await http.send("POST", "\(running.receiver)/postbacks", raw: String(decoding: third, as: UTF8.self)).status,
                try await http.send("POST", "\(running.receiver)/postbacks", raw: String(decoding: third, as: UTF8.self)).status,
            ]
            #expect(statuses == [500, 200])
            let attempts = try await http.send("GET", "\(running.receiver)/attempts").body
            let accepted = try #require(try JSONSerialization.jsonObject(with: attempts) as? [[String: Any]])
                .map { $0["accepted"] as? Bool }
            #expect(accepted == [true, true, true, false, true], "\(String(decoding: attempts, as: UTF8.self))")
            let stats = try await http.send("GET", "\(running.receiver)/stats").json
            #expect(stats["accepted"] as? Int == 3 && stats["duplicates"] as? Int == 1 && stats["rejected"] as? Int == 2)
        }
    }
}
