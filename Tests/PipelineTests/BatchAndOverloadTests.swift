import AttributionModel
import CryptoPrimitives
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceRuntime
import TestSupport
import Testing

extension PipelineSuites {
    /// The batch routes answer each item on its own and write each accepted item once; past its bounds
    /// ingest refuses at once (503/429 with `Retry-After`) and writes nothing it refused.
    @Suite("Batches and overload")
    struct BatchAndOverloadTests {
        let http = HTTPTestClient()
        typealias Hostile = HostileInputTests

        static func impression(network: String = Hostile.network, key: P256.Signing.PrivateKey = .init()) -> String {
            Hostile.impressionBody(
                Hostile.jws(header: #"{"alg":"ES256","kid":"\#(network)"}"#, payload: Hostile.payload(network: network), key: key)
            )
        }

        static func results(_ reply: HTTPTestClient.Reply) -> [[String: Any]] {
            reply.json["results"] as? [[String: Any]] ?? []
        }

        func eventsWritten(_ redis: RedisServer) async throws -> Int {
            try await streamLength(StreamNames.events, on: redis.connect())
        }

        @Test func aBatchAnswersEveryItemInOrderAndWritesEachOnce() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            let pipeline = try PipelineProcesses(redis: redis, timeScale: 1, only: ["ingest"])
            defer { pipeline.stop() }
            try #require(try await http.waitUntilUp("\(pipeline.ingestURL)/health"), "ingest started\n\(pipeline.logs())")
            let url = "\(pipeline.ingestURL)/v1/impressions/batch"

            // Valid, invalid JSON inside an item, a bad device id, a keyed one, a bare number.
            var keyed = Self.impression()
            keyed.removeLast()
            keyed += #","idempotency-key":"item-key-1"}"#
            let items = [
                Self.impression(), #"{"device-identifier":"d","impression":tru}"#,
                Self.impression().replacingOccurrences(
                    of: "\"device-identifier\":\"device-",
                    with: "\"device-identifier\":\""
                        + String(repeating: "x", count: 200)),
                keyed, "42",
            ]
            let body = "[" + items.joined(separator: ",\n") + "]"
            let first = try await http.send(HTTPClientRequestBuilder(method: "POST", url: url, body: body))
            #expect(first.status == 200, "\(first.json)")
            let results = Self.results(first)
            #expect(results.map { $0["status"] as? Int } == [202, 400, 400, 202, 400])
            #expect(
                results.map { $0["reason"] as? String } == [
                    nil, "invalid-json", "invalid-device-identifier", nil, "invalid-json",
                ])
            #expect(first.json["accepted"] as? Int == 2)
            #expect(first.json["refused"] as? Int == 3)
            #expect(results[0]["event-identifier"] is String)
            #expect(try await eventsWritten(redis) == 2)

            // The same batch again: the keyed item answers its first id and is not written again.
            let again = try await http.send(HTTPClientRequestBuilder(method: "POST", url: url, body: body))
            #expect(Self.results(again)[3]["event-identifier"] as? String == results[3]["event-identifier"] as? String)
            #expect(try await eventsWritten(redis) == 3, "only the unkeyed valid item is written again")

            // NDJSON, with the header's key giving item i the key `<header>:<i>`.
            let ndjson = [Self.impression(), Self.impression()].joined(separator: "\n") + "\n"
            let request = HTTPClientRequestBuilder(
                method: "POST", url: url, body: ndjson, contentType: "application/x-ndjson", idempotencyKey: "nd")
            let lines = try await http.send(request)
            #expect(Self.results(lines).map { $0["status"] as? Int } == [202, 202], "\(lines.json)")
            let linesAgain = try await http.send(request)
            #expect(
                Self.results(linesAgain).map { $0["event-identifier"] as? String }
                    == Self.results(lines).map { $0["event-identifier"] as? String })
            #expect(try await eventsWritten(redis) == 5)

            // Whole-body refusals.
            let many = "[" + Array(repeating: Self.impression(), count: 1_001).joined(separator: ",") + "]"
            for (body, status, reason) in [
                (many, 413, "batch-too-large"), ("[]", 400, "invalid-batch"), ("{}", 400, "invalid-batch"),
                ("[{}", 400, "invalid-batch"),
            ] {
                let reply = try await http.send(HTTPClientRequestBuilder(method: "POST", url: url, body: body))
                #expect(reply.status == status, "\(reply.json)")
                #expect(reply.json["reason"] as? String == reason)
                #expect(reply.contentType == "application/problem+json")
            }
            #expect(try await eventsWritten(redis) == 5)

            // The header's key must leave room for `:<i>`, and be there at all when sent: else the whole
            // batch is refused, before any item is read.
            for key in [String(repeating: "k", count: 241), ""] {
                let reply = try await http.send(
                    HTTPClientRequestBuilder(method: "POST", url: url, body: "[\(Self.impression())]", idempotencyKey: key))
                #expect(reply.status == 400, "\(reply.json)")
                #expect(reply.json["reason"] as? String == "invalid-idempotency-key")
            }
            let longest = try await http.send(
                HTTPClientRequestBuilder(
                    method: "POST", url: url,
                    body: "[" + Array(repeating: Self.impression(), count: 12).joined(separator: ",") + "]",
                    idempotencyKey: String(repeating: "k", count: 240)))
            #expect(Self.results(longest).map { $0["status"] as? Int } == Array(repeating: 202, count: 12), "\(longest.json)")
            #expect(try await eventsWritten(redis) == 17)

            // An item is held to a single request's body limit (MAX_BODY_BYTES, 64 KiB by default).
            var huge = Self.impression()
            huge.removeLast()
            huge += #","padding":"\#(String(repeating: "p", count: 70_000))"}"#
            let oversize = try await http.send(
                HTTPClientRequestBuilder(method: "POST", url: url, body: "[\(huge),\(Self.impression())]"))
            #expect(Self.results(oversize).map { $0["status"] as? Int } == [413, 202], "\(oversize.json)")
            #expect(Self.results(oversize).first?["reason"] as? String == "body-too-large")
            #expect(try await eventsWritten(redis) == 18)

            // A served path with another method is 405 with `Allow`; a path not served at all is 404.
            for (method, path, status, allow) in [
                ("GET", "/v1/impressions/batch", 405, "POST"), ("DELETE", "/v1/impressions", 405, "POST"),
                ("POST", "/.well-known/jwks.json", 405, "GET"), ("GET", "/v1/nothing-here", 404, nil),
            ] {
                let reply = try await http.send(method, "\(pipeline.ingestURL)\(path)")
                #expect(reply.status == status, "\(method) \(path): \(reply.json)")
                #expect(reply.allow == allow, "\(method) \(path)")
                #expect(reply.json["reason"] as? String == (status == 405 ? "method-not-allowed" : "not-found"))
            }
        }

        @Test func appBatchesCheckTheKeyPerItem() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            let pipeline = try PipelineProcesses(redis: redis, timeScale: 1, only: ["ingest"])
            defer { pipeline.stop() }
            try #require(try await http.waitUntilUp("\(pipeline.ingestURL)/health"), "ingest started\n\(pipeline.logs())")
            let key = P256.Signing.PrivateKey()
            let appKey = try await pipeline.registerCampaign(
                network: Hostile.network, publicKeyPEM: key.publicKey.pemRepresentation, publisher: Hostile.publisher,
                app: Hostile.app, http: http)
            let url = "\(pipeline.ingestURL)/v1/conversions/batch"
            let t = Hostile.now()
            func conversion(_ app: ItemIdentifier, type: String = "download") -> String {
                #"{"device-identifier":"device-\#(UUID().uuidString)","advertised-item-identifier":\#(app),"conversion-type":"\#(type)","time":\#(t)}"#
            }
            let body =
                "["
                + [conversion(Hostile.app), conversion(Hostile.otherApp), conversion(Hostile.app, type: "re-engagement")]
                .joined(separator: ",") + "]"
            let unauthenticated = try await http.send(HTTPClientRequestBuilder(method: "POST", url: url, body: body))
            #expect(unauthenticated.status == 401)
            #expect(unauthenticated.json["reason"] as? String == "missing-app-key")
            let wrong = try await http.send(HTTPClientRequestBuilder(method: "POST", url: url, body: body, token: "ak_nope"))
            #expect(Self.results(wrong).map { $0["reason"] as? String } == Array(repeating: "invalid-app-key", count: 3))
            let reply = try await http.send(HTTPClientRequestBuilder(method: "POST", url: url, body: body, token: appKey))
            let results = Self.results(reply)
            #expect(results.map { $0["status"] as? Int } == [202, 403, 202], "\(reply.json)")
            #expect(results[1]["reason"] as? String == "app-key-mismatch")
            #expect(results[0]["conversion-tag"] == nil)
            #expect(results[2]["conversion-tag"] as? String == results[2]["event-identifier"] as? String)
            #expect(try await eventsWritten(redis) == 2)

            // The single routes' 202 (spliced, not encoded): exactly the sorted-keys JSON, with the
            // conversion tag only for a re-engagement.
            for type in ["download", "re-engagement"] {
                let single = try await http.send(
                    HTTPClientRequestBuilder(
                        method: "POST", url: "\(pipeline.ingestURL)/v1/conversions", body: conversion(Hostile.app, type: type),
                        token: appKey))
                #expect(single.status == 202)
                #expect(single.contentType == "application/json")
                let id = try #require(single.json["event-identifier"] as? String)
                let expected =
                    type == "download"
                    ? #"{"event-identifier":"\#(id)"}"# : #"{"conversion-tag":"\#(id)","event-identifier":"\#(id)"}"#
                #expect(String(decoding: single.body, as: UTF8.self) == expected)
            }
        }

        /// With ingest's lag ceiling at 5: once the verifier (up only to create its group) is stopped,
        /// a batch of 10 impressions fills `events` past the ceiling. Returns that batch's body.
        func fillPastTheCeiling(_ pipeline: PipelineProcesses, _ redis: RedisServer) async throws -> String {
            try #require(try await http.waitUntilUp("\(pipeline.ingestURL)/health"), "ingest started\n\(pipeline.logs())")
            let groupExists = try await eventually {
                try await redis.connect().pipeline(
                    StreamNames.events.all(testPartitioning).map { RedisCommand("XINFO", "GROUPS", $0) }
                ).allSatisfy { $0.errorMessage == nil }
            }
            try #require(groupExists, "the verifier created its group\n\(pipeline.logs())")
            _ = pipeline.stopGracefully("verifier")
            let batch = "[" + Array(repeating: Self.impression(), count: 10).joined(separator: ",") + "]"
            let filled = try await http.send(
                HTTPClientRequestBuilder(method: "POST", url: "\(pipeline.ingestURL)/v1/impressions/batch", body: batch))
            #expect(filled.json["accepted"] as? Int == 10, "\(filled.json)")
            return batch
        }

        @Test func pastTheLagCeilingIngestRefusesAtOnceAndWritesNothing() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            let pipeline = try PipelineProcesses(
                redis: redis, timeScale: 1, extraEnvironment: ["INGEST_MAX_EVENTS_LAG": "5"], only: ["ingest", "verifier"])
            defer { pipeline.stop() }
            let url = "\(pipeline.ingestURL)/v1/impressions/batch"
            let batch = try await fillPastTheCeiling(pipeline, redis)
            // Ingest counts what it wrote itself until the next lag reading (every 250 ms): the very next
            // request is refused, not one a reading later.
            let answer = try await http.send(
                HTTPClientRequestBuilder(method: "POST", url: "\(pipeline.ingestURL)/v1/impressions", body: Self.impression()))
            #expect(answer.status == 503, "\(answer.json)")
            #expect(answer.json["reason"] as? String == "pipeline-lagging")
            #expect(answer.retryAfter == "1")
            let written = try await eventsWritten(redis)
            let batchRefused = try await http.send(HTTPClientRequestBuilder(method: "POST", url: url, body: batch))
            #expect(batchRefused.status == 503)
            #expect(batchRefused.json["reason"] as? String == "pipeline-lagging")
            #expect(try await eventsWritten(redis) == written, "nothing refused was written")
        }

        /// Refusals from a request's head are answered on the connection's event loop (EarlyRefusal):
        /// the connection stays in step, pipelined requests are answered in order, and a request the
        /// route answers otherwise first still gets the route's answer.
        @Test func aRefusedRequestLeavesItsConnectionInStep() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            let pipeline = try PipelineProcesses(
                redis: redis, timeScale: 1, extraEnvironment: ["INGEST_MAX_EVENTS_LAG": "5"], only: ["ingest", "verifier"])
            defer { pipeline.stop() }
            let batch = try await fillPastTheCeiling(pipeline, redis)
            let written = try await eventsWritten(redis)

            func post(_ path: String, _ body: String, headers: String = "") -> String {
                "POST \(path) HTTP/1.1\r\nHost: ingest\r\nContent-Type: application/json\r\n\(headers)"
                    + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
            }
            func answers(_ text: String) -> [Substring] {
                text.components(separatedBy: "HTTP/1.1 ").dropFirst().map { Substring($0) }
            }
            let port = try #require(URL(string: pipeline.ingestURL)?.port)
            let socket = try #require(RawSocket(port: port))
            // Three requests in one write: refused with its body unread, the health check, refused again
            // (a batch, with a query string).
            socket.transmit(
                post("/v1/impressions", Self.impression()) + "GET /health HTTP/1.1\r\nHost: ingest\r\n\r\n"
                    + post("/v1/impressions/batch?source=test", batch))
            let first = socket.read(timeout: .seconds(10)) { answers($0).count == 3 && $0.hasSuffix("}") }
            let replies = answers(first.text)
            try #require(replies.count == 3, "three answers in order: \(first.text)")
            #expect(replies[0].hasPrefix("503"), "\(replies[0])")
            #expect(replies[0].contains("\"reason\":\"pipeline-lagging\""), "\(replies[0])")
            #expect(replies[0].lowercased().contains("retry-after: 1\r\n"), "\(replies[0])")
            #expect(replies[0].lowercased().contains("content-type: application/problem+json\r\n"), "\(replies[0])")
            #expect(
                replies[0].range(
                    of: #"\r\nDate: \w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} GMT\r\n"#, options: .regularExpression) != nil,
                "\(replies[0])")
            #expect(replies[1].hasPrefix("200"), "\(first.text)")
            #expect(replies[2].hasPrefix("503") && replies[2].contains("pipeline-lagging"), "\(replies[2])")
            #expect(!first.closed)
            // No app key: the route's own first answer, 401, not a refusal.
            socket.transmit(post("/v1/conversions", #"{"device-identifier":"d"}"#))
            let unauthorized = socket.read(timeout: .seconds(10)) { $0.hasSuffix("}") }.text
            #expect(unauthorized.hasPrefix("HTTP/1.1 401"), "\(unauthorized)")
            #expect(unauthorized.contains("missing-app-key"), "\(unauthorized)")
            // A client closing after its request: refused too, and the connection closed.
            socket.transmit(post("/v1/impressions", Self.impression(), headers: "Connection: close\r\n"))
            let last = socket.read(timeout: .seconds(10))
            #expect(last.text.hasPrefix("HTTP/1.1 503") && last.text.contains("pipeline-lagging"), "\(last.text)")
            #expect(last.closed)
            #expect(try await eventsWritten(redis) == written, "nothing refused was written")
        }

        @Test func whileRedisStallsIngestRefusesNewWorkAtOnce() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            let pipeline = try PipelineProcesses(
                redis: redis, timeScale: 1, extraEnvironment: ["INGEST_QUEUE_TARGET_MS": "20"], only: ["ingest"])
            defer { pipeline.stop() }
            try #require(try await http.waitUntilUp("\(pipeline.ingestURL)/health"), "ingest started\n\(pipeline.logs())")
            let url = "\(pipeline.ingestURL)/v1/impressions"
            // Warm: the script is loaded before Redis stalls.
            #expect(
                try await http.send(HTTPClientRequestBuilder(method: "POST", url: url, body: Self.impression())).status == 202)
            try await expectNewWorkRefusedWhileRedisStalls(redis, pause: "WRITE") {
                HTTPClientRequestBuilder(method: "POST", url: url, body: Self.impression())
            }
            #expect(
                try await http.send(HTTPClientRequestBuilder(method: "POST", url: url, body: Self.impression())).status == 202)
            #expect(try await eventsWritten(redis) == 3)
        }

        /// Pauses Redis for 1.5 s (`CLIENT PAUSE … mode`), sends a request that waits on it, and 400 ms
        /// later (past ten times the 20 ms target, a round trip under way is a stall) expects the next
        /// one refused at once with 503 `overloaded`, while the first is still taken.
        func expectNewWorkRefusedWhileRedisStalls(
            _ redis: RedisServer, pause mode: String, _ request: @escaping @Sendable () -> HTTPClientRequestBuilder
        ) async throws {
            _ = try await redis.connect().send(RedisCommand("CLIENT", "PAUSE", "1500", mode))
            let stalled = Task { try await http.send(request()) }
            try await Task.sleep(for: .milliseconds(400))
            let started = ContinuousClock.now
            let refused = try await http.send(request())
            #expect(ContinuousClock.now - started < .milliseconds(500), "refused at once, not queued")
            #expect(refused.status == 503, "\(refused.json)")
            #expect(refused.json["reason"] as? String == "overloaded")
            #expect(refused.retryAfter == "1")
            #expect(try await stalled.value.status == 202, "the request already taken is not lost")
        }

        /// An app key's owner is looked up before any write (and again once remembered owners expire):
        /// when Redis stops answering then, the requests waiting on that lookup are the stall, and new
        /// ones are refused at once rather than joining them until the link heals.
        @Test func whileAnAppKeyLookupStallsIngestRefusesNewWorkAtOnce() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            let pipeline = try PipelineProcesses(
                redis: redis, timeScale: 1, extraEnvironment: ["INGEST_QUEUE_TARGET_MS": "20"], only: ["ingest"])
            defer { pipeline.stop() }
            try #require(try await http.waitUntilUp("\(pipeline.ingestURL)/health"), "ingest started\n\(pipeline.logs())")
            let appKey = try await pipeline.registerCampaign(
                network: Hostile.network, publicKeyPEM: P256.Signing.PrivateKey().publicKey.pemRepresentation,
                publisher: Hostile.publisher, app: Hostile.app, http: http)
            let url = "\(pipeline.ingestURL)/v1/conversions"
            @Sendable func conversion() -> HTTPClientRequestBuilder {
                let body =
                    #"{"device-identifier":"device-\#(UUID().uuidString)","advertised-item-identifier":\#(Hostile.app),"conversion-type":"download","time":\#(Hostile.now())}"#
                return HTTPClientRequestBuilder(method: "POST", url: url, body: body, token: appKey)
            }
            try await expectNewWorkRefusedWhileRedisStalls(redis, pause: "ALL", conversion)
            #expect(try await http.send(conversion()).status == 202)
            #expect(try await eventsWritten(redis) == 2)
        }

        @Test func oneFloodingNetworkIsHeldToItsRateAndOthersAreNot() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            let pipeline = try PipelineProcesses(
                redis: redis, timeScale: 1, extraEnvironment: ["INGEST_CALLER_RATE": "1", "INGEST_CALLER_BURST": "3"],
                only: ["ingest"])
            defer { pipeline.stop() }
            try #require(try await http.waitUntilUp("\(pipeline.ingestURL)/health"), "ingest started\n\(pipeline.logs())")
            let flood = "[" + (0..<5).map { _ in Self.impression(network: "flood.example") }.joined(separator: ",") + "]"
            let reply = try await http.send(
                HTTPClientRequestBuilder(method: "POST", url: "\(pipeline.ingestURL)/v1/impressions/batch", body: flood))
            #expect(Self.results(reply).map { $0["status"] as? Int } == [202, 202, 202, 429, 429], "\(reply.json)")
            #expect(Self.results(reply).last?["reason"] as? String == "rate-limited")
            #expect(reply.retryAfter == "1")
            let single = try await http.send(
                HTTPClientRequestBuilder(
                    method: "POST", url: "\(pipeline.ingestURL)/v1/impressions", body: Self.impression(network: "flood.example")))
            #expect(single.status == 429)
            #expect(single.json["reason"] as? String == "rate-limited")
            #expect(single.retryAfter == "1")
            let other = try await http.send(
                HTTPClientRequestBuilder(
                    method: "POST", url: "\(pipeline.ingestURL)/v1/impressions", body: Self.impression(network: "calm.example")))
            #expect(other.status == 202, "another network keeps its own share")
            #expect(try await eventsWritten(redis) == 4)
        }
    }
}
