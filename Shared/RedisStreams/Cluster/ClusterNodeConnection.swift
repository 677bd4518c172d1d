import Logging
import NIOCore

/// One cluster node's connection as `ClusterRouter` drives it, on the connection's own thread: a whole
/// round trip, or its two halves (write every node's part first, then read each), so that the nodes of
/// a pipeline work on their parts at once.
protocol ClusterNodeConnection: AnyObject {
    func execute(_ commands: [RedisCommand]) throws -> [RedisReply]
    /// Connects now unless connected: a node that refuses fails the call before another node ran anything.
    func connect() throws
    func write(_ commands: [RedisCommand]) throws
    func read(count: Int) throws -> [RedisReply]
    func close()
}

extension HiredisContext: ClusterNodeConnection {}

/// A TLS node (hiredis 0.14 has no TLS): an `EventLoopRedisConnection`, waited on from the router's
/// thread. `write` sends at once; `read` waits for those replies.
final class EventLoopNodeConnection: ClusterNodeConnection, @unchecked Sendable {
    private let connection: EventLoopRedisConnection
    /// The replies of the last `write`, until `read` takes them.
    private var written: (count: Int, replies: EventLoopFuture<[RedisReply]>)?

    init(configuration: RedisConfiguration, logger: Logger) {
        self.connection = EventLoopRedisConnection(configuration: configuration, logger: logger)
    }

    func execute(_ commands: [RedisCommand]) throws -> [RedisReply] {
        try Self.wait(self.connection.replies(to: commands))
    }

    func connect() throws {
        try Self.wait(self.connection.connect())
    }

    func write(_ commands: [RedisCommand]) throws {
        self.written = (commands.count, self.connection.replies(to: commands))
    }

    func read(count: Int) throws -> [RedisReply] {
        guard let written, written.count == count else {
            throw RedisError(.invalidArgument, "read(count: \(count)) without a write of as many commands")
        }
        self.written = nil
        return try Self.wait(written.replies)
    }

    func close() {
        self.connection.closeSoon()
    }

    /// The future's value on this (not an event loop's) thread; its error as the `RedisError` it is.
    private static func wait<T: Sendable>(_ future: EventLoopFuture<T>) throws -> T {
        do {
            return try future.wait()
        } catch let error as RedisError {
            throw error
        } catch {
            throw RedisError(.io, "\(error)")
        }
    }
}
