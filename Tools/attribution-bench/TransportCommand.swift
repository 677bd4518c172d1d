import ArgumentParser
import Foundation
import Logging
import PipelineLaunch
import RedisStreams

/// Round trips per second of the pipeline's Redis transports against a local redis-server it starts:
/// the blocking hiredis context (`RedisConnection`, plaintext), the event-loop connection in plaintext
/// (`EventLoopRedisConnection`), and the event-loop connection over TLS (what a `rediss://` URL uses,
/// on a TLS-only server with client certificates). Each of `--tasks` tasks has a connection of its own
/// and sends pipelines of `--batch` commands one after another, as a stage's consumer loops do.
struct TransportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "transport",
        abstract: "Round trips per second of each Redis transport (hiredis, event loop, event loop over TLS).")

    @Option(help: "Seconds each measurement runs.")
    var seconds = 3.0

    @Option(help: "Concurrent tasks, each with its own connection; comma-separated.")
    var tasks = "1,8"

    @Option(help: "Commands per round trip; comma-separated.")
    var batch = "1,20"

    @Option(help: "Only these transports, comma-separated (hiredis, event-loop, event-loop-tls).")
    var transports = "hiredis,event-loop,event-loop-tls"

    @Flag(help: "Print the figures as JSON lines instead of text.")
    var json = false

    struct Figure: Codable {
        var transport: String
        var tasks: Int
        var batch: Int
        var roundTripsPerSecond: Double
        var microsecondsPerRoundTrip: Double
    }

    func validate() throws {
        _ = try Self.integers(tasks, "--tasks")
        _ = try Self.integers(batch, "--batch")
        let known = ["hiredis", "event-loop", "event-loop-tls"]
        guard transports.split(separator: ",").allSatisfy({ known.contains(String($0)) }) else {
            throw ValidationError("--transports takes \(known.joined(separator: ", ")), comma-separated, got \(transports)")
        }
    }

    func run() async throws {
        let taskCounts = try Self.integers(tasks, "--tasks")
        let batches = try Self.integers(batch, "--batch")
        let chosen = transports.split(separator: ",").map(String.init)
        let plain = try await RedisServer.start()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("transport-tls-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let tls = try await RedisServer.start(tls: try RedisServer.TLS.made(in: folder))
        defer {
            plain.stop()
            tls.stop()
        }
        let logger = Logger(label: "attribution-bench.transport")
        for transport in chosen {
            for taskCount in taskCounts {
                for commands in batches {
                    let send: @Sendable () -> any RoundTripper =
                        switch transport {
                        case "hiredis": { RedisConnection(configuration: plain.configuration, logger: logger) }
                        case "event-loop": { EventLoopRedisConnection(configuration: plain.configuration, logger: logger) }
                        default: { RedisConnection(configuration: tls.configuration, logger: logger) }
                        }
                    let count = try await measure(taskCount, commands, send)
                    let perSecond = Double(count) / seconds
                    let figure = Figure(
                        transport: transport, tasks: taskCount, batch: commands, roundTripsPerSecond: perSecond,
                        microsecondsPerRoundTrip: Double(taskCount) * 1e6 / perSecond)
                    if json {
                        print(String(decoding: try JSONEncoder().encode(figure), as: UTF8.self))
                    } else {
                        print(
                            "\(transport): \(taskCount) tasks, \(commands) commands a round trip: "
                                + String(format: "%.0f round trips/s, %.1f µs each", perSecond, figure.microsecondsPerRoundTrip))
                    }
                }
            }
        }
    }

    /// Round trips completed by `taskCount` tasks in `seconds`, after a warm-up of 100 each.
    private func measure(_ taskCount: Int, _ commands: Int, _ connect: @Sendable () -> any RoundTripper) async throws -> Int {
        let pipeline =
            [RedisCommand("SET", "transport:key", "value")]
            + Array(repeating: RedisCommand("GET", "transport:key"), count: commands - 1)
        let duration = Duration.milliseconds(Int64(seconds * 1_000))
        return try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<taskCount {
                let connection = connect()
                group.addTask {
                    for _ in 0..<100 { _ = try await connection.roundTrip(pipeline) }
                    let end = ContinuousClock.now + duration
                    var count = 0
                    while ContinuousClock.now < end {
                        _ = try await connection.roundTrip(pipeline)
                        count += 1
                    }
                    return count
                }
            }
            return try await group.reduce(0, +)
        }
    }

    private static func integers(_ text: String, _ name: String) throws -> [Int] {
        // Every value or none: one that is not a positive integer is refused, never skipped.
        let values = text.split(separator: ",", omittingEmptySubsequences: false).map { Int($0) }
        guard !values.isEmpty, values.allSatisfy({ ($0 ?? 0) > 0 }) else {
            throw ValidationError("\(name) takes positive integers, comma-separated, got \(text)")
        }
        return values.compactMap { $0 }
    }
}

/// What the measurement sends through: either transport.
protocol RoundTripper: Sendable {
    func roundTrip(_ commands: [RedisCommand]) async throws -> [RedisReply]
}

extension RedisConnection: RoundTripper {
    func roundTrip(_ commands: [RedisCommand]) async throws -> [RedisReply] { try await self.pipeline(commands) }
}

extension EventLoopRedisConnection: RoundTripper {
    func roundTrip(_ commands: [RedisCommand]) async throws -> [RedisReply] { try await self.pipeline(commands) }
}
