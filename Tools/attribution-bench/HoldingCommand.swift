import ArgumentParser
import AttributionModel
import Foundation
import Logging
import PipelineCatalog
import RedisStreams

/// Measures what holding postbacks costs Redis: schedules `--count` realistic held postbacks exactly as
/// the scheduler does (compact layout), reads the memory they take, then releases them all with the
/// scheduler's release script and times it. The JSON-envelope layout the scheduler used before is
/// measured on a smaller sample for comparison. Keys are private to the run and deleted afterwards.
struct HoldingCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "holding",
        abstract: "Redis bytes per held postback (compact layout, N held) and release throughput.")

    @Option(name: .customLong("redis-url"), help: "Redis to measure (a private one: scripts/bench-holding.sh starts it).")
    var redisURL = "redis://127.0.0.1:6379/0"

    @Option(help: "Held postbacks to schedule.")
    var count = 1_000_000

    @Option(help: "Sample size for the JSON-envelope (hashed) layout comparison.")
    var comparisonCount = 100_000

    @Flag(help: "Print the figures as one JSON object instead of text.")
    var json = false

    struct Figures: Codable {
        var held: Int
        var compactBytesPerHeld: Double
        var compactMemoryUsageBytesPerHeld: Double
        var averageMessageBytes: Double
        var scheduledPerSecond: Double
        var releasedPerSecond: Double
        var jsonLayoutSample: Int
        var jsonLayoutBytesPerHeld: Double
    }

    func run() async throws {
        let connection = RedisConnection(configuration: try RedisConfiguration(url: redisURL), logger: Logger(label: "bench"))
        defer { Task { await connection.close() } }
        let run = UUID().uuidString.prefix(8).lowercased()
        var generator = SystemRandomNumberGenerator()

        // As the scheduler's held queues: binary members, released as JSON `postback.due` messages.
        let compact = DelayedQueue(
            name: "bench:\(run):held", target: "bench:\(run):released", layout: .compact,
            releasedAs: PartitionedQueue.releasedPostback)
        let before = try await usedMemory(connection)
        var messageBytes = 0
        let scheduleStart = ContinuousClock.now
        for batchStart in stride(from: 0, to: count, by: 1_000) {
            var commands: [RedisCommand] = []
            for _ in batchStart..<min(count, batchStart + 1_000) {
                let (order, due) = Self.heldPostback(using: &generator)
                let message = CompactHeldPostback.encode(order, dueAt: due)
                messageBytes += message.count
                commands += compact.schedule(id: order.payload.postbackIdentifier, dueAtMilliseconds: due, message: message)
            }
            _ = try await connection.pipeline(commands)
        }
        let scheduleSeconds = (ContinuousClock.now - scheduleStart).seconds
        let after = try await usedMemory(connection)
        let usage = try await connection.send(RedisCommand("MEMORY", "USAGE", compact.dueKey, "SAMPLES", "0")).int ?? 0

        // Release everything as the scheduler's pumps would (500 per script call), into a stream.
        let releaseStart = ContinuousClock.now
        var released = 0
        while true {
            let moved = try await compact.releaseDue(now: .max, limit: 500, on: connection)
            if moved == 0 { break }
            released += moved
        }
        let releaseSeconds = (ContinuousClock.now - releaseStart).seconds
        _ = try await connection.send(RedisCommand("DEL", compact.dueKey, compact.target))

        // The previous layout: a JSON envelope in a hash plus the id in the sorted set.
        let hashed = DelayedQueue(name: "bench:\(run):json", target: "bench:\(run):released")
        let hashedBefore = try await usedMemory(connection)
        for batchStart in stride(from: 0, to: comparisonCount, by: 1_000) {
            var commands: [RedisCommand] = []
            for _ in batchStart..<min(comparisonCount, batchStart + 1_000) {
                let (order, due) = Self.heldPostback(using: &generator)
                let envelope = Envelope(time: due, body: .postbackDue(order))
                commands += hashed.schedule(
                    id: order.payload.postbackIdentifier, dueAtMilliseconds: due, message: try envelope.encoded())
            }
            _ = try await connection.pipeline(commands)
        }
        let hashedAfter = try await usedMemory(connection)
        _ = try await connection.send(RedisCommand("DEL", hashed.dueKey, hashed.itemsKey))

        let figures = Figures(
            held: count, compactBytesPerHeld: Double(after - before) / Double(max(1, count)),
            compactMemoryUsageBytesPerHeld: Double(usage) / Double(max(1, count)),
            averageMessageBytes: Double(messageBytes) / Double(max(1, count)),
            scheduledPerSecond: Double(count) / scheduleSeconds, releasedPerSecond: Double(released) / releaseSeconds,
            jsonLayoutSample: comparisonCount,
            jsonLayoutBytesPerHeld: Double(hashedAfter - hashedBefore) / Double(max(1, comparisonCount)))
        if json {
            print(String(decoding: try JSONCoding.encoder.encode(figures), as: UTF8.self))
        } else {
            print(
                """
                held postbacks:                  \(figures.held)
                Redis bytes per held postback:   \(String(format: "%.1f", figures.compactBytesPerHeld)) (INFO used_memory delta; MEMORY USAGE says \(String(format: "%.1f", figures.compactMemoryUsageBytesPerHeld)))
                compact message:                 \(String(format: "%.1f", figures.averageMessageBytes)) bytes on average
                scheduled (pipelined, 1,000):    \(Int(figures.scheduledPerSecond)) per second
                released (script, 500 a call):   \(Int(figures.releasedPerSecond)) per second
                JSON-envelope layout (\(figures.jsonLayoutSample)):   \(String(format: "%.1f", figures.jsonLayoutBytesPerHeld)) bytes per held postback
                """)
        }
    }

    func usedMemory(_ connection: RedisConnection) async throws -> Int64 {
        let info = try await connection.send(RedisCommand("INFO", "memory")).string ?? ""
        for line in info.split(whereSeparator: \.isNewline) where line.hasPrefix("used_memory:") {
            return Int64(line.dropFirst("used_memory:".count)) ?? 0
        }
        throw ValidationError("INFO memory has no used_memory")
    }

    /// A tier-3 winning first postback (every field present: the largest kind), due 24–144 h from now.
    static func heldPostback(using generator: inout some RandomNumberGenerator) -> (PostbackOrder, Milliseconds) {
        let order = PostbackOrder(
            payload: PostbackPayload(
                adNetworkIdentifier: AdNetworkIdentifier("network\(Int.random(in: 0..<50, using: &generator)).adattributionkit")!,
                sourceIdentifier: String(Int.random(in: 1000...9999, using: &generator)),
                advertisedItemIdentifier: ItemIdentifier.random(in: 1_000_000_000...1_999_999_999, using: &generator),
                publisherItemIdentifier: ItemIdentifier.random(in: 1_000_000_000...1_999_999_999, using: &generator),
                conversionType: .download, marketplaceIdentifier: PostbackPayload.appStoreMarketplace,
                postbackIdentifier: RandomUUID.make(using: &generator), postbackSequenceIndex: 0, didWin: true),
            adInteractionType: .click, conversionValue: Int.random(in: 0...63, using: &generator), coarseConversionValue: nil,
            countryCode: "US", isDevelopment: false)
        let now = Milliseconds(Date().timeIntervalSince1970 * 1000)
        return (order, now + Milliseconds.random(in: 86_400_000...518_400_000, using: &generator))
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
