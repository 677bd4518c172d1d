import AttributionModel
import Foundation
import RedisStreams

/// Where messages are waiting and why, read from Redis in one pipeline: what `attribution status`
/// prints and what every service exports as gauges on `/metrics`.
public struct PipelineSnapshot: Sendable, Codable {
    /// The pipeline's streams and the consumer group reading each.
    public static let streams: [(stream: String, group: String?)] =
        ConsumerGroups.all.flatMap { group in group.streams.map { ($0, Optional(group.name)) } } + [(StreamNames.rejected, nil)]
    public static let deadLetterStreams = ConsumerGroups.all.map(\.deadLetterStream) + [StreamNames.deliveriesDead]
    public static let delayedQueues: [(queue: DelayedQueue, label: String)] =
        [
            (DelayedQueues.settlingConversions, "settling conversions"),
            (DelayedQueues.windowTimers, "window timers"),
        ]
        + DelayedQueues.heldPostbacks.enumerated().map { ($1, "held postbacks, window \($0)") }
        + [(DelayedQueues.deliveryRetries, "delivery retries")]

    public struct Group: Sendable, Codable {
        public var stream: String
        public var group: String
        public var consumers: Int
        public var pending: Int
        /// Entries not yet delivered to the group (Redis 7's `lag`); nil when Redis cannot tell.
        public var lag: Int?
        /// How long the oldest pending entry has waited for its acknowledgement, ms.
        public var oldestPendingMilliseconds: Int?
    }

    public struct Stream: Sendable, Codable {
        public var name: String
        public var length: Int
    }

    public struct Queue: Sendable, Codable {
        public var name: String
        public var label: String
        public var count: Int
        /// When the next item is due, ms since 1970.
        public var nextDue: Milliseconds?
    }

    public var takenAt: Milliseconds
    public var streams: [Stream]
    public var groups: [Group]
    public var queues: [Queue]
    public var deadLetters: [Stream]

    public static func read(on connection: RedisConnection) async throws -> PipelineSnapshot {
        var commands: [RedisCommand] = []
        for (stream, _) in streams { commands.append(RedisCommand("XLEN", stream)) }
        for (stream, group) in streams {
            guard group != nil else { continue }
            commands.append(RedisCommand("XINFO", "GROUPS", stream))
        }
        for (stream, group) in streams {
            guard let group else { continue }
            commands.append(RedisCommand("XPENDING", stream, group, "IDLE", "0", "-", "+", "1"))
        }
        for (queue, _) in delayedQueues { commands += queue.stateCommands }
        for stream in deadLetterStreams { commands.append(RedisCommand("XLEN", stream)) }
        // Errors (a stream or group not created yet) come back per command, not for the whole pipeline.
        var replies = try await connection.pipeline(commands)[...]
        let takenAt = WallClock.nowMilliseconds()
        var snapshot = PipelineSnapshot(takenAt: takenAt, streams: [], groups: [], queues: [], deadLetters: [])
        for (stream, _) in streams {
            snapshot.streams.append(Stream(name: stream, length: Int(replies.removeFirst().int ?? 0)))
        }
        var infos: [String: [String: RedisReply]] = [:]
        for (stream, group) in streams {
            guard let group else { continue }
            for info in replies.removeFirst().elements {
                let fields = info.fieldMap
                if fields["name"]?.string == group { infos[stream] = fields }
            }
        }
        for (stream, group) in streams {
            guard let group else { continue }
            let oldest = replies.removeFirst().elements.first?.elements
            guard let info = infos[stream] else { continue }
            snapshot.groups.append(
                Group(
                    stream: stream, group: group, consumers: Int(info["consumers"]?.int ?? 0),
                    pending: Int(info["pending"]?.int ?? 0), lag: info["lag"]?.int.map { Int($0) },
                    oldestPendingMilliseconds: oldest.flatMap { $0.count > 2 ? $0[2].int.map { Int($0) } : nil }))
        }
        for (queue, label) in delayedQueues {
            let state = DelayedQueue.state(count: replies.removeFirst(), first: replies.removeFirst())
            snapshot.queues.append(Queue(name: queue.name, label: label, count: state.count, nextDue: state.nextDue))
        }
        for stream in deadLetterStreams {
            snapshot.deadLetters.append(Stream(name: stream, length: Int(replies.removeFirst().int ?? 0)))
        }
        return snapshot
    }
}
