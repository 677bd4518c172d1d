import Logging
import NIOCore

/// One node's connection as `ClusterRouter` uses it, on the router's thread: an
/// `EventLoopRedisConnection` (the one transport, TLS included) whose round trips that thread waits
/// for. Writing and reading are two halves, so the router sends a pipeline's parts to every node
/// involved before it waits for any of them.
final class ClusterNode: @unchecked Sendable {
    private let connection: EventLoopRedisConnection
    /// The round trip `write` started and `read` has not collected.
    private var pending: EventLoopFuture<[RedisReply]>?
    private var isClosed = false

    init(configuration: RedisConfiguration, logger: Logger) {
        self.connection = EventLoopRedisConnection(configuration: configuration, logger: logger)
    }

    /// One round trip: `write`, then `read`.
    func execute(_ commands: [RedisCommand]) throws -> [RedisReply] {
        try self.write(commands)
        return try self.read(count: commands.count)
    }

    /// Connects now unless connected: the router opens every node of a pipeline before writing to any,
    /// so a node that refuses fails the call before another node has run part of it.
    func connect() throws {
        if self.isClosed { throw RedisError(.closed, "connection closed") }
        try self.connection.connect().wait()
    }

    /// Sends `commands` without waiting for their replies.
    func write(_ commands: [RedisCommand]) throws {
        if self.isClosed { throw RedisError(.closed, "connection closed") }
        try RedisCommand.refuseEmpty(commands)
        self.pending = self.connection.replies(to: commands)
    }

    /// The replies to what `write` sent: `count` of them.
    func read(count: Int) throws -> [RedisReply] {
        guard let pending else { throw RedisError(.io, "reading replies failed: nothing was written") }
        self.pending = nil
        let replies = try pending.wait()
        guard replies.count == count else { throw RedisError(.protocolError, "\(replies.count) replies to \(count) commands") }
        return replies
    }

    /// Closes the socket for good; later calls throw `closed`.
    func close() {
        self.isClosed = true
        self.connection.closeSoon()
    }
}
