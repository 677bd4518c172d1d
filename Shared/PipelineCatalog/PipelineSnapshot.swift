import AttributionModel
import Foundation
import RedisStreams

/// Where messages are waiting and why, read from Redis in one pipeline (split by node on a cluster):
/// what `attribution status` prints and what every service exports as gauges on `/metrics`. Each
/// stream, group and queue is summed over its partitions; groups also list their lag per partition.
public struct PipelineSnapshot: Sendable, Codable {
    /// The pipeline's streams and the consumer group reading each.
    public static let streams: [(stream: PartitionedName, group: String?)] =
        ConsumerGroups.all.flatMap { group in group.streams.map { ($0, Optional(group.name)) } } + [(StreamNames.rejected, nil)]
    public static let deadLetterStreams = ConsumerGroups.all.map(\.deadLetterStream) + [StreamNames.deliveriesDead]
    public static let delayedQueues: [(queue: PartitionedQueue, label: String)] =
        [
            (DelayedQueues.settlingConversions, "settling conversions"),
            (DelayedQueues.windowTimers, "window timers"),
        ]
        + DelayedQueues.heldPostbacks.enumerated().map { ($1, "held postbacks, window \($0)") }
        + [(DelayedQueues.deliveryRetries, "delivery retries")]

    public struct Group: Sendable, Codable {
        public var stream: String
        public var group: String
        /// The most consumers any partition's group has (every replica reads every partition).
        public var consumers: Int
        public var pending: Int
        /// Entries not yet delivered to the group (Redis 7's `lag`), summed; nil when Redis cannot tell.
        public var lag: Int?
        /// The same per partition, by index (nil where Redis cannot tell or the group is missing).
        public var partitionLag: [Int?]
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
    public var partitions: Int
    /// Redis Cluster's nodes as the cluster sees them (empty on one Redis).
    public var nodes: [RedisNode] = []
    public var streams: [Stream]
    public var groups: [Group]
    public var queues: [Queue]
    public var deadLetters: [Stream]
    /// Postback destinations whose circuit is open, per dispatcher replica (recent reports only).
    public var openCircuits: [OpenCircuits] = []

    /// Nothing unread or pending in any group and nothing in any delayed queue: the pipeline has no work
    /// left (dead letters aside), as a ledger or a test waits for. A lag Redis cannot tell (nil, after entries
    /// were deleted or trimmed) is not counted: pending entries and the delayed queues still are.
    public var isIdle: Bool {
        groups.allSatisfy { $0.pending == 0 && ($0.lag ?? 0) == 0 } && queues.allSatisfy { $0.count == 0 }
    }

    /// The snapshot of a pipeline of `partitioning`'s partitions, taken at `now` (the caller's clock).
    public static func read(on connection: RedisConnection, _ partitioning: Partitioning, at now: Milliseconds)
        async throws -> PipelineSnapshot
    {
        let partitions = partitioning.partitions
        var commands: [RedisCommand] = []
        for (stream, _) in streams {
            commands += partitions.map { RedisCommand("XLEN", stream($0)) }
        }
        for (stream, group) in streams {
            guard group != nil else { continue }
            commands += partitions.map { RedisCommand("XINFO", "GROUPS", stream($0)) }
        }
        for (stream, group) in streams {
            guard let group else { continue }
            commands += partitions.map { RedisCommand("XPENDING", stream($0), group, "IDLE", "0", "-", "+", "1") }
        }
        for (stream, group) in streams where group != nil {
            commands += partitions.map { GroupProgress.lastEntryCommand(stream($0)) }
        }
        for (queue, _) in delayedQueues { commands += partitions.flatMap { queue($0).stateCommands } }
        for stream in deadLetterStreams { commands += partitions.map { RedisCommand("XLEN", stream($0)) } }
        commands.append(RedisCommand("HGETALL", StageKeys.dispatcherCircuits))
        // Errors (a stream or group not created yet) come back per command, not for the whole pipeline.
        var replies = try await connection.pipeline(commands)[...]
        func next(_ count: Int) -> ArraySlice<RedisReply> {
            defer { replies = replies.dropFirst(count) }
            return replies.prefix(count)
        }
        var snapshot = PipelineSnapshot(
            takenAt: now, partitions: partitioning.count, streams: [], groups: [], queues: [],
            deadLetters: [])
        for (stream, _) in streams {
            snapshot.streams.append(Stream(name: stream.base, length: next(partitions.count).reduce(0) { $0 + Int($1.int ?? 0) }))
        }
        var infos: [String: [[String: RedisReply]?]] = [:]
        for (stream, group) in streams {
            guard let group else { continue }
            infos[stream.base] = next(partitions.count).map { reply in
                reply.elements.map(\.fieldMap).first { $0["name"]?.string == group }
            }
        }
        var oldest: [String: [Int]] = [:]
        for (stream, group) in streams where group != nil {
            oldest[stream.base] = next(partitions.count).compactMap { reply -> Int? in
                guard let first = reply.elements.first?.elements, first.count > 2 else { return nil }
                return first[2].int.map { Int($0) }
            }
        }
        for (stream, group) in streams {
            guard let group else { continue }
            let last = next(partitions.count).map(GroupProgress.lastEntry)
            let perPartition = infos[stream.base] ?? []
            guard perPartition.contains(where: { $0 != nil }) else { continue }
            let lags = zip(perPartition, last).map { info, last -> Int? in
                GroupProgress.unread(
                    lag: info?["lag"]?.int,
                    lastDelivered: info?["last-delivered-id"]?.string.flatMap(StreamTrim.EntryID.init), lastEntry: last
                ).map { Int($0) }
            }
            snapshot.groups.append(
                Group(
                    stream: stream.base, group: group,
                    consumers: perPartition.compactMap { $0?["consumers"]?.int }.max().map { Int($0) } ?? 0,
                    pending: perPartition.reduce(0) { $0 + Int($1?["pending"]?.int ?? 0) },
                    lag: lags.contains(where: { $0 == nil }) ? nil : lags.reduce(0) { $0 + ($1 ?? 0) },
                    partitionLag: lags, oldestPendingMilliseconds: oldest[stream.base]?.max()))
        }
        for (queue, label) in delayedQueues {
            var count = 0
            var nextDue: Milliseconds?
            for _ in partitions {
                let pair = next(2)
                let state = DelayedQueue.state(count: pair[pair.startIndex], first: pair[pair.startIndex + 1])
                count += state.count
                if let due = state.nextDue { nextDue = min(nextDue ?? due, due) }
            }
            snapshot.queues.append(Queue(name: queue.name, label: label, count: count, nextDue: nextDue))
        }
        for stream in deadLetterStreams {
            snapshot.deadLetters.append(
                Stream(name: stream.base, length: next(partitions.count).reduce(0) { $0 + Int($1.int ?? 0) }))
        }
        if let circuits = next(1).first { snapshot.openCircuits = OpenCircuits.fresh(in: circuits, now: snapshot.takenAt) }
        if connection.configuration.cluster {
            let text = try? await connection.send(RedisCommand("CLUSTER", "NODES")).string
            snapshot.nodes = RedisNode.parse(clusterNodes: text ?? "", partitioning: partitioning)
        }
        return snapshot
    }
}

/// One node of a Redis Cluster in the status view: its address, role, health and the partitions it serves.
public struct RedisNode: Sendable, Codable, Hashable {
    public var address: String
    /// `primary` or `replica`.
    public var role: String
    /// `ok`, or what the cluster says is wrong (`fail`, `fail?` for suspected, `disconnected`).
    public var health: String
    /// Partitions (indices) whose hash slot this node serves (primaries only).
    public var partitions: [Int]

    /// Rows of `CLUSTER NODES`: `<id> <ip:port@bus> <flags> <primary> <ping> <pong> <epoch> <link> <slot>…`.
    public static func parse(clusterNodes text: String, partitioning: Partitioning) -> [RedisNode] {
        let slots = partitioning.partitions.map { ClusterSlot.slot(of: $0.tag) }
        return text.split(separator: "\n").compactMap { line -> RedisNode? in
            let fields = line.split(separator: " ").map(String.init)
            guard fields.count >= 8 else { return nil }
            let flags = Set(fields[2].split(separator: ",").map(String.init))
            let address = String(fields[1].split(separator: "@").first ?? "")
            var ranges: [ClosedRange<Int>] = []
            for range in fields.dropFirst(8) where !range.hasPrefix("[") {
                let bounds = range.split(separator: "-").compactMap { Int($0) }
                if let low = bounds.first { ranges.append(low...(bounds.last ?? low)) }
            }
            let health =
                flags.contains("fail") ? "fail" : flags.contains("fail?") ? "fail?" : fields[7] == "connected" ? "ok" : fields[7]
            return RedisNode(
                address: address, role: flags.contains("master") ? "primary" : "replica", health: health,
                partitions: slots.indices.filter { index in ranges.contains { $0.contains(slots[index]) } })
        }.sorted { ($0.role, $0.address) < ($1.role, $1.address) }
    }
}
