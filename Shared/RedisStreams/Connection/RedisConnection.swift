import Logging
import NIOPosix
import Synchronization

/// A connection to Redis: one server's over an `EventLoopRedisConnection` (the pipeline's one Redis
/// transport, plaintext or TLS), or a Redis Cluster's over a `ClusterRouter`.
///
/// With `configuration.cluster` a `ClusterRouter` keeps one `EventLoopRedisConnection` per primary and
/// routes each command by hash slot (see `ClusterRouter`). It runs on a dedicated single-thread
/// `NIOThreadPool`, which serialises its state and, on a `TRYAGAIN` backoff or a round trip's wait, never
/// occupies Swift's cooperative pool or an event loop. Concurrent callers are served one at a time.
public final class RedisConnection: Sendable {
    /// Where this connection goes.
    public let configuration: RedisConfiguration
    private let logger: Logger
    private let transport: Transport
    private let isClosed = Atomic<Bool>(false)

    private enum Transport: Sendable {
        /// One server: every pipeline is one round trip, checked first with `checksSlots`.
        case node(EventLoopRedisConnection)
        /// A cluster: routed by slot over one connection per primary, on the router's own thread.
        case cluster(ClusterRouter, NIOThreadPool)
    }

    /// Creates the connection (and in cluster mode its thread); nothing is sent until the first command.
    public init(configuration: RedisConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        if configuration.cluster {
            let threadPool = NIOThreadPool(numberOfThreads: 1)
            threadPool.start()
            self.transport = .cluster(ClusterRouter(configuration: configuration, logger: logger), threadPool)
        } else {
            self.transport = .node(EventLoopRedisConnection(configuration: configuration, logger: logger))
        }
    }

    deinit {
        // Not closed by its owner: no call can be in flight (each holds a reference), so free here.
        if !self.isClosed.load(ordering: .acquiring) {
            switch self.transport {
            case .node(let connection):
                connection.closeSoon()
            case .cluster(let router, let threadPool):
                router.close()
                threadPool.shutdownGracefully { _ in }
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
        if case .node(let connection) = self.transport {
            if self.isClosed.load(ordering: .acquiring) { throw RedisError(.closed, "connection closed") }
            return try await connection.pipeline(commands)
        }
        return try await self.onRouterThread { router in
            try router.execute(commands)
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
        guard self.configuration.cluster, !keys.isEmpty else { return keys.map { _ in nil } }
        return try await self.onRouterThread { router in body(router, keys) }
    }

    /// `pipeline` for a transaction (MULTI … EXEC) that must run on `node` (from `answeringNodes`) or not
    /// at all: in cluster mode, when its slot is served by another node now, nothing is sent and it
    /// throws `redirected` (nor is it resent elsewhere after a redirect). With `node` nil, or on one
    /// server, exactly `pipeline`.
    public func pipeline(_ commands: [RedisCommand], onlyOn node: String?) async throws -> [RedisReply] {
        guard let node, self.configuration.cluster else { return try await self.pipeline(commands) }
        if commands.isEmpty { return [] }
        return try await self.onRouterThread { router in
            try router.execute(commands, pinned: node)
        }
    }

    /// Closes the sockets (and stops the router's thread); calls already queued finish first, later calls
    /// throw `closed`.
    public func close() async {
        guard self.isClosed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        switch self.transport {
        case .node(let connection):
            await connection.close()
        case .cluster(let router, let threadPool):
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                threadPool.submit { _ in
                    router.close()
                    continuation.resume()
                }
            }
            try? await threadPool.shutdownGracefully()
        }
        self.logger.debug("redis connection closed")
    }

    /// Runs `body` on the cluster router's thread.
    ///
    /// Uses `submit` rather than `runIfActive` on purpose: `runIfActive` skips work whose task is
    /// already cancelled, which would make a stopping stage fail to commit the batch it holds.
    /// A round trip, once asked for, always completes or fails on its own.
    private func onRouterThread<T: Sendable>(
        _ body: @escaping @Sendable (ClusterRouter) throws -> T
    ) async throws -> T {
        if self.isClosed.load(ordering: .acquiring) {
            throw RedisError(.closed, "connection closed")
        }
        guard case .cluster(let router, let threadPool) = self.transport else {
            preconditionFailure("only a cluster connection has a router")
        }
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            threadPool.submit { state in
                guard case .active = state else {
                    continuation.resume(throwing: RedisError(.closed, "connection closed"))
                    return
                }
                continuation.resume(with: Result { try body(router) })
            }
        }
    }
}
