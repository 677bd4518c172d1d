/// One consumer of one consumer group on one stream: creates the group, reads new entries, claims stale ones.
public struct StreamConsumer: Sendable {
    /// The stream read from.
    public let stream: String
    /// The consumer group; every replica of a stage shares it.
    public let group: String
    /// This replica's name inside the group.
    public let consumer: String
    /// Most entries returned by one read or claim.
    public let batchSize: Int
    /// How long a read waits for new entries; 0 means do not wait.
    public let blockMilliseconds: Int
    /// The hash counting failed attempts per entry id (`<group>:attempts` unless given).
    public let attemptsKey: String

    /// A consumer; `blockMilliseconds` must stay below the connection's command timeout.
    public init(
        stream: String, group: String, consumer: String, batchSize: Int = 100, blockMilliseconds: Int = 1000,
        attemptsKey: String? = nil
    ) {
        self.stream = stream
        self.group = group
        self.consumer = consumer
        self.batchSize = max(1, batchSize)
        self.blockMilliseconds = max(0, blockMilliseconds)
        self.attemptsKey = attemptsKey ?? "\(group):attempts"
    }

    /// Creates the group at the start of the stream (and the stream itself); an existing group is fine.
    public func ensureGroup(on connection: RedisConnection) async throws {
        do {
            _ = try await connection.send(RedisCommand("XGROUP", "CREATE", self.stream, self.group, "0", "MKSTREAM"))
        } catch let error as RedisError where error.serverErrorPrefix == "BUSYGROUP" {
            // Another replica (or an earlier run) created it: exactly what we wanted.
        }
    }

    /// Reads up to `batchSize` entries never delivered to this group, waiting up to `blockMilliseconds`.
    public func readNew(on connection: RedisConnection) async throws -> [StreamEntry] {
        // A BLOCK that outlasts the socket timeout would look like a dead server and drop the connection.
        guard self.blockMilliseconds + 500 <= connection.configuration.commandTimeoutMilliseconds else {
            throw RedisError(
                .invalidArgument,
                "BLOCK \(self.blockMilliseconds) ms must be at least 500 ms below the command timeout "
                    + "\(connection.configuration.commandTimeoutMilliseconds) ms"
            )
        }
        var arguments = ["XREADGROUP", "GROUP", self.group, self.consumer, "COUNT", String(self.batchSize)]
        if self.blockMilliseconds > 0 {
            arguments += ["BLOCK", String(self.blockMilliseconds)]
        }
        arguments += ["STREAMS", self.stream, ">"]
        let reply = try await connection.send(RedisCommand(arguments))
        // nil: BLOCK timed out; otherwise [[stream, entries]].
        guard let streamReply = reply.elements.first else { return [] }
        let parts = streamReply.elements
        guard parts.count == 2 else {
            throw RedisError(.unexpectedReply, "XREADGROUP reply has \(parts.count) parts per stream")
        }
        return try StreamEntry.parse(parts[1]).entries
    }

    /// One XAUTOCLAIM step from `cursor`: ownership of up to `batchSize` entries pending longer than
    /// `minIdleMilliseconds`, without their messages (`JUSTID`), so Redis does not count a delivery yet;
    /// take each with `claim(_:)`. Pending ids of deleted entries are acked (and their attempt counts removed).
    public func claimStale(
        minIdleMilliseconds: Int,
        startingAt cursor: String,
        on connection: RedisConnection
    ) async throws -> StreamClaim {
        let reply = try await connection.send(
            RedisCommand(
                "XAUTOCLAIM", self.stream, self.group, self.consumer, String(max(0, minIdleMilliseconds)), cursor,
                "COUNT", String(self.batchSize), "JUSTID"
            )
        )
        // Redis 7: [cursor, ids, deleted ids].
        let parts = reply.elements
        guard parts.count >= 2, let nextCursor = parts[0].string else {
            throw RedisError(.unexpectedReply, "XAUTOCLAIM reply has \(parts.count) parts")
        }
        let deletedIDs = parts.count >= 3 ? parts[2].elements.compactMap(\.string) : []
        if !deletedIDs.isEmpty {
            // Redis 7 already dropped them from the pending list; acking again is a harmless no-op there.
            _ = try await connection.pipeline([
                StreamCommands.ack(self.stream, group: self.group, ids: deletedIDs),
                RedisCommand(["HDEL", self.attemptsKey] + deletedIDs),
            ])
        }
        return StreamClaim(nextCursor: nextCursor, ids: parts[1].elements.compactMap(\.string), deletedIDs: deletedIDs)
    }

    /// Takes one pending entry (whatever its idle time) with its message, counting a delivery; nil when
    /// the entry was deleted from the stream meanwhile.
    public func claim(_ id: String, on connection: RedisConnection) async throws -> StreamEntry? {
        let reply = try await connection.send(RedisCommand("XCLAIM", self.stream, self.group, self.consumer, "0", id))
        return try StreamEntry.parse(reply).entries.first
    }

    /// How many entries are delivered to the group but not yet acked (XPENDING summary).
    public func pendingCount(on connection: RedisConnection) async throws -> Int {
        let reply = try await connection.send(RedisCommand("XPENDING", self.stream, self.group))
        guard let count = reply.elements.first?.int else {
            throw RedisError(.unexpectedReply, "XPENDING summary without a count")
        }
        return Int(count)
    }
}
