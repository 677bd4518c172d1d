import AttributionModel
import Foundation
import PipelineCatalog
import RedisStreams
import TestSupport
import Testing

/// `attribution stream`: every partition of a stream merged in entry order, each message as its JSON
/// envelope whichever form it is stored in, the tail, a range, following, and a clear refusal of a name
/// that is no stream.
@Suite("attribution stream")
struct StreamToolTests {
    static let tool = builtExecutables().appendingPathComponent("attribution")
    static let partitioning = Partitioning()

    static func order(_ id: String) -> PostbackOrder {
        PostbackOrder(
            payload: PostbackPayload(
                adNetworkIdentifier: AdNetworkIdentifier("example123.adattributionkit")!, sourceIdentifier: "5239",
                advertisedItemIdentifier: 1_108_187_390, publisherItemIdentifier: 5_838_492, conversionType: .download,
                marketplaceIdentifier: PostbackPayload.appStoreMarketplace, postbackIdentifier: id,
                postbackSequenceIndex: 0, didWin: true),
            adInteractionType: .click, conversionValue: 42, coarseConversionValue: nil, countryCode: "US", isDevelopment: false)
    }

    /// `postbacks` with, out of partition order: a postback in the envelope's compact form (p01, 3-0),
    /// bytes that are no message (p03, 4-0), a held postback in its own form (p02, 5-0); and a dead
    /// letter on `dispatcher:dead` with its error beside the message.
    static func fill(_ redis: RedisServer) async throws {
        let connection = redis.connect(label: "test.stream")
        let postbacks = StreamNames.postbacks
        let dead = ConsumerGroups.dispatcher.deadLetterStream
        let replies = try await connection.pipeline([
            add(postbacks(partitioning[2]), "5-0", CompactHeldPostback.encode(order("held"), dueAt: 9)),
            add(postbacks(partitioning[1]), "3-0", Envelope(id: "due", time: 7, body: .postbackDue(order("due"))).encoded()),
            add(postbacks(partitioning[3]), "4-0", Array("not a message".utf8)),
            add(
                dead(partitioning[0]), "8-0", Envelope(id: "dead", time: 8, body: .postbackDue(order("dead"))).encoded(),
                error: "no route to the ad network"),
            // As release 0.1.0 wrote every message between stages: the compact envelope.
            add(
                StreamNames.attributions(partitioning[0]), "2-0",
                // A window.closed as 0.1.0 wrote it (a line of AttributionModelTests' stream-entries-0.1.0.txt).
                Self.bytes(
                    hex:
                        "f502084800000003060d77696e646f772e636c6f73656407060a6d6573736167652d3130010380a0abfef96209030205081a00000011060c636f6e76657273696f6e2d313d03040103808091a3fb62"
                )),
        ])
        #expect(replies.allSatisfy { $0.errorMessage == nil }, "\(replies)")
        await connection.close()
    }

    /// XADD of `message` under the id `id`, with a dead letter's `error` beside it.
    static func add(_ stream: String, _ id: String, _ message: [UInt8], error: String? = nil) -> RedisCommand {
        RedisCommand(
            bytes: [Array("XADD".utf8), Array(stream.utf8), Array(id.utf8), Array("e".utf8), message]
                + (error.map { [Array("error".utf8), Array($0.utf8)] } ?? []))
    }

    static func lines(_ arguments: [String], _ redis: RedisServer) throws -> [[String: Any]] {
        let result = try ChildProcess.run(tool, arguments: ["stream"] + arguments + ["--redis-url", redis.url])
        try #require(result.status == 0, "\(String(decoding: result.stderr, as: UTF8.self))")
        return String(decoding: result.stdout, as: UTF8.self).split(separator: "\n").map {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] ?? [:]
        }
    }

    @Test func everyPartitionInEntryOrderEachMessageAsItsJSONEnvelope() async throws {
        let redis = try await RedisServer.start()
        defer { redis.stop() }
        try await Self.fill(redis)
        let all = try Self.lines(["postbacks"], redis)
        #expect(all.map { $0["entry"] as? String } == ["3-0", "4-0", "5-0"])
        #expect(all.map { $0["stream"] as? String } == [1, 3, 2].map { StreamNames.postbacks(Self.partitioning[$0]) })
        let due = try #require(all[0]["message"] as? [String: Any])
        #expect(due["type"] as? String == "postback.due" && due["id"] as? String == "due" && due["time"] as? Int == 7)
        let body = try #require(due["body"] as? [String: Any])
        #expect(JSONSerialization.isValidJSONObject(body) && !body.isEmpty)
        #expect(all[1]["message"] == nil && all[1]["undecodable"] is String)
        #expect(all[1]["raw"] as? String == Data("not a message".utf8).base64EncodedString())
        let held = try #require(all[2]["message"] as? [String: Any])
        #expect(held["type"] as? String == "postback.due" && held["id"] as? String == "held" && held["time"] as? Int == 9)
        // The form each message is stored in: this release's JSON, or one of 0.1.0's binary forms.
        #expect(all.map { $0["stored"] as? String } == ["json", nil, "held-postback"])
        let old = try Self.lines(["attributions"], redis)
        #expect(old.count == 1 && old[0]["stored"] as? String == "compact")
        #expect((old[0]["message"] as? [String: Any])?["type"] as? String == "window.closed")

        #expect(try Self.lines(["postbacks", "--last", "2"], redis).map { $0["entry"] as? String } == ["4-0", "5-0"])
        #expect(try Self.lines(["postbacks", "--from", "4", "--to", "4-0"], redis).map { $0["entry"] as? String } == ["4-0"])
        let one = try Self.lines([StreamNames.postbacks(Self.partitioning[2])], redis)
        #expect(one.map { $0["entry"] as? String } == ["5-0"])

        let dead = try Self.lines(["dispatcher:dead"], redis)
        #expect(dead.count == 1 && (dead[0]["message"] as? [String: Any])?["id"] as? String == "dead")
        #expect((dead[0]["fields"] as? [String: Any])?["error"] as? String == "no route to the ad network")
    }

    @Test func storedStatesPlansAndHeldPostbacksAsJSON() async throws {
        let redis = try await RedisServer.start()
        defer { redis.stop() }
        let connection = redis.connect(label: "test.stored")
        var state = DeviceAttributionState()
        _ = state.record(
            VerifiedImpression(
                deviceIdentifier: "d",
                payload: ImpressionPayload(
                    impressionIdentifier: "i-1", adNetworkIdentifier: AdNetworkIdentifier("a.adattributionkit")!,
                    advertisedItemIdentifier: 1, publisherItemIdentifier: 2, sourceIdentifier: 3, timestamp: 4),
                interaction: .click(at: 5, loadedAt: 4), kind: .adAttributionKit))
        let held = DelayedQueues.heldPostbacks[1](Self.partitioning[0])
        _ = try await connection.pipeline(
            [
                RedisCommand("SET", "winner:device:{p00}:1:d").appending(CompactCoding.encode(state)),
                RedisCommand("SET", "scheduler:plan:{p00}:done").appending(StageKeys.finishedPlanMarker),
            ] + held.schedule(id: "", dueAtMilliseconds: 20, message: CompactHeldPostback.encode(Self.order("b"), dueAt: 20))
                + held.schedule(id: "", dueAtMilliseconds: 10, message: CompactHeldPostback.encode(Self.order("a"), dueAt: 10)))
        await connection.close()

        func run(_ arguments: [String]) throws -> (status: Int32, lines: [String], stderr: String) {
            let result = try ChildProcess.run(Self.tool, arguments: ["stored"] + arguments + ["--redis-url", redis.url])
            let lines = String(decoding: result.stdout, as: UTF8.self).split(separator: "\n").map(String.init)
            return (result.status, lines, String(decoding: result.stderr, as: UTF8.self))
        }
        let device = try run(["winner:device:{p00}:1:d"])
        #expect(device.status == 0 && device.lines.count == 1)
        let decoded = try JSONCoding.decoder.decode(DeviceAttributionState.self, from: Data(device.lines[0].utf8))
        #expect(decoded == state)
        #expect(try run(["scheduler:plan:{p00}:done"]).lines == [#"{"finished":true}"#])
        let queue = try run([held.dueKey])
        let lines = queue.lines.map { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] ?? [:] }
        #expect(lines.map { $0["due"] as? Int } == [10, 20])
        #expect(lines.map { ($0["message"] as? [String: Any])?["id"] as? String } == ["a", "b"])
        #expect(try run([held.dueKey, "--limit", "1"]).lines.count == 1)

        let missing = try run(["scheduler:plan:{p00}:none"])
        #expect(missing.status != 0 && missing.stderr.contains("no such key: scheduler:plan:{p00}:none"))
        let other = try run(["events:{p00}"])
        #expect(other.status != 0 && other.stderr.contains("is not a stored state"))
    }

    @Test func aNameThatIsNoStreamIsRefusedInOneLine() async throws {
        let redis = try await RedisServer.start()
        defer { redis.stop() }
        let result = try ChildProcess.run(Self.tool, arguments: ["stream", "postback", "--redis-url", redis.url])
        let errors = String(decoding: result.stderr, as: UTF8.self)
        #expect(result.status != 0 && result.stdout.isEmpty)
        #expect(errors.contains("no stream postback: name one of events, verified, rejected"), "\(errors)")
    }

    @Test func followingPrintsWhatIsAddedOnceEach() async throws {
        let redis = try await RedisServer.start()
        defer { redis.stop() }
        try await Self.fill(redis)
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("stream-\(UUID().uuidString).jsonl")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: output) }
        let process = Process()
        process.executableURL = Self.tool
        process.arguments = ["stream", "postbacks", "--last", "1", "--follow", "--every", "50", "--redis-url", redis.url]
        process.standardOutput = try FileHandle(forWritingTo: output)
        try process.run()
        defer { process.terminate() }
        func entries() -> [String] {
            let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap {
                ((try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any])?["entry"] as? String
            }
        }
        #expect(try await eventually { entries() == ["5-0"] })
        let connection = redis.connect(label: "test.stream")
        let added = try Envelope(id: "later", time: 10, body: .postbackDue(Self.order("later"))).encoded()
        // One entry after the tail on another partition, and one older than the tail that was not there before.
        _ = try await connection.send(Self.add(StreamNames.postbacks(Self.partitioning[7]), "6-0", added))
        _ = try await connection.send(Self.add(StreamNames.postbacks(Self.partitioning[1]), "3-1", added))
        await connection.close()
        #expect(
            try await eventually { entries() == ["5-0", "3-1", "6-0"] || entries() == ["5-0", "6-0", "3-1"] }, "\(entries())")
        try await Task.sleep(for: .milliseconds(300))
        #expect(entries().count == 3, "nothing printed twice: \(entries())")
    }

    static func bytes(hex: String) -> [UInt8] {
        let digits = Array(hex.utf8)
        return stride(from: 0, to: digits.count, by: 2).map {
            UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)!
        }
    }
}
