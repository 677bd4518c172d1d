import AttributionModel
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceRuntime
import TestSupport
import Testing

extension PipelineSuites {
    /// `attribution-bench load`, which the benchmark's figures come from: it must send every request it
    /// offers, count each answer once, and end even when nobody answers.
    @Suite("attribution-bench load")
    struct LoadToolTests {
        let http = HTTPTestClient()

        static func load(_ arguments: [String]) throws -> [String: Any] {
            let output = try OperationsTests.run(["load"] + arguments, tool: "attribution-bench")
            let last = output.split(separator: "\n").last.map(String.init) ?? ""
            return (try? JSONSerialization.jsonObject(with: Data(last.utf8))) as? [String: Any] ?? [:]
        }

        @Test func everyOfferedEventIsAnsweredAndCountedOnce() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            let pipeline = try PipelineProcesses(redis: redis, timeScale: 1, only: ["ingest"], inProcess: true)
            defer { pipeline.stop() }
            try #require(try await http.waitUntilUp("\(pipeline.ingestURL)/health"), "ingest started\n\(pipeline.logs())")
            let keys = FileManager.default.temporaryDirectory.appendingPathComponent("load-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: keys) }
            _ = try OperationsTests.run(["keygen", "--name", "network", "--out", keys.path])
            func arguments(url: String, rate: Int, batch: Int = 1) -> [String] {
                [
                    "--ingest-url", url, "--network", HostileInputTests.network,
                    "--key-file", keys.appendingPathComponent("network.private.pem").path, "--rate", String(rate),
                    "--duration", "1", "--batch", String(batch),
                    // Fewer connections than requests in flight at times: some wait for one.
                    "--connections", "4",
                ]
            }
            for (batch, requests) in [(1, 300), (10, 30)] {
                let figures = try Self.load(arguments(url: pipeline.ingestURL, rate: 300, batch: batch))
                #expect(figures["sent"] as? Int == 300, "\(figures)")
                #expect(figures["requests"] as? Int == requests, "\(figures)")
                #expect(figures["accepted"] as? Int == 300, "\(figures)")
                #expect(figures["failed"] as? Int == 0 && figures["shed"] as? Int == 0, "\(figures)")
            }
            #expect(try await streamLength(StreamNames.events, on: redis.connect()) == 600, "each event written once")

            // A lag ceiling of 10 events and no verifier: past it, ingest refuses the rest at once
            // (503 `pipeline-lagging`), which the tool reads off the problem body and counts as shed.
            let lagging = try PipelineProcesses(
                redis: redis, timeScale: 1, extraEnvironment: ["INGEST_MAX_EVENTS_LAG": "10"], only: ["ingest"], inProcess: true)
            defer { lagging.stop() }
            try #require(try await http.waitUntilUp("\(lagging.ingestURL)/health"), "ingest started\n\(lagging.logs())")
            let shed = try Self.load(arguments(url: lagging.ingestURL, rate: 300))
            let refusals = shed["refusals"] as? [String: Int] ?? [:]
            #expect((shed["accepted"] as? Int ?? 0) + (shed["shed"] as? Int ?? 0) == 300, "\(shed)")
            #expect((shed["shed"] as? Int ?? 0) >= 150 && shed["failed"] as? Int == 0, "\(shed)")
            #expect(refusals["503 pipeline-lagging"] == shed["shed"] as? Int, "\(shed)")
            #expect((shed["answerP99Milliseconds"] as? Double ?? -1) > 0, "\(shed)")

            // Nobody listening: every request fails as unanswered, and the run still ends.
            let closed = try Self.load(arguments(url: "http://127.0.0.1:\(try freeLoopbackPort())", rate: 50))
            #expect(closed["sent"] as? Int == 50, "\(closed)")
            #expect(closed["failed"] as? Int == 50 && closed["accepted"] as? Int == 0, "\(closed)")
            #expect((closed["refusals"] as? [String: Int])?["no answer"] == 50, "\(closed)")
        }

        /// No connections at all would leave every request waiting for one that is never opened: refused
        /// before anything is signed or sent.
        @Test func zeroConnectionsIsRefused() throws {
            let result = try ChildProcess.run(
                PipelineProcesses.binaryDirectory().appendingPathComponent("attribution-bench"),
                arguments: [
                    "load", "--ingest-url", "http://127.0.0.1:1", "--network", HostileInputTests.network,
                    "--key-file", "/nonexistent", "--rate", "10", "--duration", "1", "--connections", "0",
                ])
            let errors = String(decoding: result.stderr, as: UTF8.self)
            #expect(result.status != 0)
            #expect(errors.contains("--connections must be positive"), "\(errors)")
        }
    }
}
