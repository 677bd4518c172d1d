import Logging
import NIOPosix
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A connection to Redis over blocking hiredis, driven from its own thread.
///
/// Every hiredis call runs on a dedicated single-thread `NIOThreadPool`, so a `BLOCK` read never
/// occupies Swift's cooperative pool, and the one thread serialises use of the non-thread-safe
/// context. The context is created on first use and dropped after any I/O error; the call that
/// failed throws and the next call reconnects. Concurrent callers are served one at a time.
///
/// With `configuration.cluster` the same calls go to a Redis Cluster: a `ClusterRouter` on the same
/// thread keeps one context per primary and routes each command by hash slot (see `ClusterRouter`).
///
/// With `configuration.tls` (one server) the calls go over an `EventLoopRedisConnection` instead, which
/// speaks TLS: hiredis 0.14 (Debian's) has no TLS. Plaintext keeps the blocking context until moving it
/// costs the benchmark nothing: on the event-loop transport the scheduler still drains about a sixth
/// fewer conversions a second (`scripts/bench_rtt.py` at loopback).
public final class RedisConnection: Sendable {
    /// Where this connection goes.
    public let configuration: RedisConfiguration
    private let logger: Logger
    private let threadPool: NIOThreadPool
    private let transport: Transport
    private let isClosed = Atomic<Bool>(false)

    /// What carries the commands; used on the connection's thread only.
    fileprivate enum Transport: Sendable {
        /// One server: every pipeline is one round trip on one context, checked first with `checksSlots`.
        case node(HiredisContext, SlotGuard?)
        /// A cluster: routed by slot over one context per primary.
        case cluster(ClusterRouter)
        /// One server over TLS; its calls never reach the connection's thread (`RedisConnection.pipeline`).
        case tls(EventLoopRedisConnection)

        func execute(_ commands: [RedisCommand], pinned: String? = nil) throws -> [RedisReply] {
            switch self {
            case .node(let context, nil):
                return try context.execute(commands)
            case .node(let context, let slotGuard?):
                let slots = try slotGuard.check(commands)
                do {
                    let replies = try context.execute(commands)
                    slotGuard.record(commands, slots: slots, replies: replies)
                    return replies
                } catch let error as RedisError
                    where error.code == .io || error.code == .protocolError || error.code == .tlsFailed
                {
                    // The context dropped its socket, and the server any WATCH with it.
                    slotGuard.reset()
                    throw error
                }
            case .cluster(let router):
                return try router.execute(commands, pinned: pinned)
            case .tls:
                preconditionFailure("a TLS connection's calls do not run on the connection's thread")
            }
        }

        func close() {
            switch self {
            case .node(let context, _): context.close()
            case .cluster(let router): router.close()
            case .tls(let connection): connection.closeSoon()
            }
        }
    }

    /// Creates the connection and its thread; nothing is sent until the first command.
    public init(configuration: RedisConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        if configuration.cluster {
            self.transport = .cluster(ClusterRouter(configuration: configuration, logger: logger))
        } else if configuration.tls != nil {
            self.transport = .tls(EventLoopRedisConnection(configuration: configuration, logger: logger))
        } else {
            self.transport = .node(
                HiredisContext(configuration: configuration, logger: logger),
                configuration.checksSlots ? SlotGuard() : nil
            )
        }
        self.threadPool = NIOThreadPool(numberOfThreads: 1)
        self.threadPool.start()
        // hiredis 0.14 writes with write(2), not send(MSG_NOSIGNAL): writing to a socket the server
        // has reset raises SIGPIPE, which would kill the process. Blocking it on this thread only
        // turns that into an EPIPE error without changing signal handling for the rest of the app.
        self.threadPool.submit { state in
            guard case .active = state else { return }
            Self.blockSIGPIPEOnCurrentThread()
        }
    }

    deinit {
        // Not closed by its owner: no call can be in flight (each holds a reference), so free here.
        if !self.isClosed.load(ordering: .acquiring) {
            self.transport.close()
            self.threadPool.shutdownGracefully { _ in }
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
        if case .tls(let connection) = self.transport {
            if self.isClosed.load(ordering: .acquiring) { throw RedisError(.closed, "connection closed") }
            return try await connection.pipeline(commands)
        }
        return try await self.onConnectionThread { transport in
            try transport.execute(commands)
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
        return try await self.onConnectionThread { transport in
            guard case .cluster(let router) = transport else { return keys.map { _ in nil } }
            return body(router, keys)
        }
    }

    /// `pipeline` for a transaction (MULTI … EXEC) that must run on `node` (from `answeringNodes`) or not
    /// at all: in cluster mode, when its slot is served by another node now, nothing is sent and it
    /// throws `redirected` (nor is it resent elsewhere after a redirect). With `node` nil, or on one
    /// server, exactly `pipeline`.
    public func pipeline(_ commands: [RedisCommand], onlyOn node: String?) async throws -> [RedisReply] {
        guard let node, self.configuration.cluster else { return try await self.pipeline(commands) }
        if commands.isEmpty { return [] }
        return try await self.onConnectionThread { transport in
            try transport.execute(commands, pinned: node)
        }
    }

    /// Closes the socket and stops the thread; calls already queued finish first, later calls throw `closed`.
    public func close() async {
        guard self.isClosed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        let transport = self.transport
        if case .tls(let connection) = transport { await connection.close() }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            self.threadPool.submit { _ in
                transport.close()
                continuation.resume()
            }
        }
        try? await self.threadPool.shutdownGracefully()
        self.logger.debug("redis connection closed")
    }

    /// Runs `body` on the connection's thread.
    ///
    /// Uses `submit` rather than `runIfActive` on purpose: `runIfActive` skips work whose task is
    /// already cancelled, which would make a stopping stage fail to commit the batch it holds.
    /// A round trip, once asked for, always completes or fails on its own.
    private func onConnectionThread<T: Sendable>(
        _ body: @escaping @Sendable (Transport) throws -> T
    ) async throws -> T {
        if self.isClosed.load(ordering: .acquiring) {
            throw RedisError(.closed, "connection closed")
        }
        let transport = self.transport
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            self.threadPool.submit { state in
                guard case .active = state else {
                    continuation.resume(throwing: RedisError(.closed, "connection closed"))
                    return
                }
                continuation.resume(with: Result { try body(transport) })
            }
        }
    }

    private static func blockSIGPIPEOnCurrentThread() {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }
}
