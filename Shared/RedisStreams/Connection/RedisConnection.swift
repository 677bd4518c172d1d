import Logging
import NIOPosix
import Synchronization

/// A connection to Redis: one server, or a Redis Cluster (`configuration.cluster`).
///
/// On one server every call is a round trip on one `EventLoopRedisConnection` (TLS with
/// `configuration.tls`); concurrent callers' pipelines share its socket, each answered in order. With
/// `configuration.cluster` the calls go to a `ClusterRouter` on a thread of this connection's own,
/// which serialises the router's state: it keeps one connection per primary (`ClusterNode`, an
/// `EventLoopRedisConnection` it waits on) and routes each command by hash slot.
public final class RedisConnection: Sendable {
    /// Where this connection goes.
    public let configuration: RedisConfiguration
    private let logger: Logger
    private let transport: Transport
    private let isClosed = Atomic<Bool>(false)

    /// What carries the commands.
    fileprivate enum Transport: Sendable {
        /// One server: every pipeline is one round trip (checked first with `checksSlots`).
        case node(EventLoopRedisConnection)
        /// A cluster: routed by slot over one connection per primary, on the router's thread.
        case cluster(ClusterRouter, NIOThreadPool)
    }

    /// Creates the connection (and, for a cluster, its thread); nothing is sent until the first command.
    public init(configuration: RedisConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        if configuration.cluster {
            let thread = NIOThreadPool(numberOfThreads: 1)
            thread.start()
            self.transport = .cluster(ClusterRouter(configuration: configuration, logger: logger), thread)
        } else {
            self.transport = .node(EventLoopRedisConnection(configuration: configuration, logger: logger))
        }
    }

    deinit {
        // Not closed by its owner: no call can be in flight (each holds a reference), so free here.
        if !self.isClosed.load(ordering: .acquiring) {
            switch self.transport {
            case .node(let connection): connection.closeSoon()
            case .cluster(let router, let thread):
                thread.submit { _ in router.close() }
                thread.shutdownGracefully { _ in }
            }
        }
    }

    /// Sends one command; an error reply from the server is thrown as a `RedisError` with code `server`.
    public func send(_ command: RedisCommand) async throws -> RedisReply {
        let reply = try await self.pipeline([command])[0]
        if let message = reply.errorMessage {
            throw RedisError(.server, message)
        }
        return reply
    }

    /// Sends all commands in one round trip (in cluster mode, one per node involved) and returns one reply
    /// per command, in order, error replies included.
    public func pipeline(_ commands: [RedisCommand]) async throws -> [RedisReply] {
        if commands.isEmpty { return [] }
        if self.isClosed.load(ordering: .acquiring) { throw RedisError(.closed, "connection closed") }
        switch self.transport {
        case .node(let connection): return try await connection.pipeline(commands)
        case .cluster: return try await self.onRouter { router in try router.execute(commands) }
        }
    }

    /// Cluster mode: the node (`host:port`) serving each key's slot per this connection's map as it
    /// stands (not reloaded). Nil on one server, or before the first call.
    public func servingNodes(of keys: [String]) async throws -> [String?] {
        try await self.onRouter(keys) { $0.servingNodes(of: $1) }
    }

    /// Cluster mode: the node (`host:port`) that last answered one of this connection's commands on each
    /// key's slot (a redirect is no answer): after a read, the node it was read from, even when the
    /// same call then reloaded the map for another slot's sake. Nil on one server, or before any.
    public func answeringNodes(of keys: [String]) async throws -> [String?] {
        try await self.onRouter(keys) { $0.answeringNodes(of: $1) }
    }

    private func onRouter(
        _ keys: [String], _ body: @escaping @Sendable (ClusterRouter, [String]) -> [String?]
    ) async throws -> [String?] {
        guard case .cluster = self.transport, !keys.isEmpty else { return keys.map { _ in nil } }
        return try await self.onRouter { router in body(router, keys) }
    }

    /// `pipeline` for a transaction (MULTI … EXEC) that must run on `node` (from `answeringNodes`) or not
    /// at all: in cluster mode, when its slot is served by another node now, nothing is sent and it
    /// throws `redirected` (nor is it resent elsewhere after a redirect). With `node` nil, or on one
    /// server, exactly `pipeline`.
    public func pipeline(_ commands: [RedisCommand], onlyOn node: String?) async throws -> [RedisReply] {
        guard let node, case .cluster = self.transport else { return try await self.pipeline(commands) }
        if commands.isEmpty { return [] }
        return try await self.onRouter { router in try router.execute(commands, pinned: node) }
    }

    /// Closes the sockets (and stops the router's thread); calls already sent finish first, later calls
    /// throw `closed`.
    public func close() async {
        guard self.isClosed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        switch self.transport {
        case .node(let connection):
            await connection.close()
        case .cluster(let router, let thread):
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                thread.submit { _ in
                    router.close()
                    continuation.resume()
                }
            }
            try? await thread.shutdownGracefully()
        }
        self.logger.debug("redis connection closed")
    }

    /// Runs `body` on the router's thread.
    ///
    /// Uses `submit` rather than `runIfActive` on purpose: `runIfActive` skips work whose task is
    /// already cancelled, which would make a stopping stage fail to commit the batch it holds.
    /// A round trip, once asked for, always completes or fails on its own.
    private func onRouter<T: Sendable>(_ body: @escaping @Sendable (ClusterRouter) throws -> T) async throws -> T {
        guard case .cluster(let router, let thread) = self.transport else {
            preconditionFailure("cluster routing asked of a one-server connection")
        }
        if self.isClosed.load(ordering: .acquiring) {
            throw RedisError(.closed, "connection closed")
        }
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            thread.submit { state in
                guard case .active = state else {
                    continuation.resume(throwing: RedisError(.closed, "connection closed"))
                    return
                }
                continuation.resume(with: Result { try body(router) })
            }
        }
    }
}
