import Foundation
import RedisStreams
import TestSupport
import Testing

extension PipelineSuites {
    /// `attribution relay`, which the round-trip benchmark and the network fault run put in front of
    /// Redis: every round trip through it takes the added time, replies arrive whole and in order, and a
    /// changed delay file takes effect on open connections.
    @Suite("attribution relay")
    struct RelayToolTests {
        @Test func everyRoundTripTakesTheAddedTimeAndNothingElseChanges() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            let processes = try PipelineProcesses(redis: redis, timeScale: 1, only: [])
            defer { processes.stop() }
            let port = try freeLoopbackPort()
            let delayFile = FileManager.default.temporaryDirectory.appendingPathComponent("relay-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: delayFile) }
            try "40".write(to: delayFile, atomically: true, encoding: .utf8)
            try processes.start(
                "relay", executable: "attribution",
                arguments: [
                    "relay", "--listen", "127.0.0.1:\(port)", "--upstream", "127.0.0.1:\(redis.port)", "--delay-file",
                    delayFile.path,
                ], port: nil)
            var configuration = redis.configuration
            configuration.port = port
            let connection = RedisConnection(configuration: configuration, logger: .test("test.relay"))
            let up = try await eventually { (try? await connection.send(RedisCommand("PING")))?.string == "PONG" }
            try #require(up, "the relay answers\n\(processes.logs())")

            func roundTrip() async throws -> Duration {
                let started = ContinuousClock.now
                _ = try await connection.send(RedisCommand("PING"))
                return ContinuousClock.now - started
            }
            #expect(try await roundTrip() >= .milliseconds(40))
            // Large values in one pipeline: split into many chunks, each held, all in order.
            let values = (0..<20).map { "\($0):" + String(repeating: "v", count: 500_000) }
            let replies = try await connection.pipeline(
                values.indices.map { RedisCommand("SET", "k\($0)", values[$0]) }
                    + values.indices.map { RedisCommand("GET", "k\($0)") })
            #expect(replies.suffix(values.count).map(\.string) == values)

            try "0".write(to: delayFile, atomically: true, encoding: .utf8)
            let quick = try await eventually { try await roundTrip() < .milliseconds(20) }
            #expect(quick, "a changed delay file applies to an open connection")
        }
    }
}
