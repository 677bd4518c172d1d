import Logging
import NIOCore
import NIOPosix

/// A connection to one Redis server whose socket is driven by a NIO event loop, for callers that
/// already run on that loop (ingest's request handlers run on their HTTP connection's loop).
///
/// `RedisConnection` hands every round trip to a thread of its own. When that thread is idle, each
/// hand-off costs two context switches plus a blocking read: about a quarter of ingest's CPU per
/// single-event request in `perf`. Here the loop writes the commands and reads the replies between
/// its other work, and a caller on the same loop makes a round trip with no thread hand-off at all.
///
/// Replies are parsed by hiredis's own reader (`RedisReplyHandler`), so they are exactly what a
/// `RedisConnection` returns. Like it, this connects on first use (AUTH and SELECT included), drops the
/// socket after any I/O error or a reply later than `commandTimeoutMilliseconds` (the round trips then
/// waiting throw `io`), and reconnects on the next call. One server only: Redis Cluster's routing,
/// redirections and failover stay with `RedisConnection` (`ClusterRouter`).
public final class EventLoopRedisConnection: Sendable {
    /// Where this connection goes.
    public let configuration: RedisConfiguration
    /// The loop that owns the socket; round trips asked for on it need no hop.
    public let eventLoop: any EventLoop
    private let logger: Logger
    private let state: NIOLoopBoundBox<State>

    private struct State {
        /// The handler of the socket in use or being opened; nil before the first call and after a drop.
        var connection: EventLoopFuture<NIOLoopBound<RedisReplyHandler>>?
        /// That socket's handler, once open.
        var ready: NIOLoopBound<RedisReplyHandler>?
        var isClosed = false
        /// The cluster's one-slot rules (`RedisConfiguration.checksSlots`); checked before anything is sent.
        var slotGuard: SlotGuard?
    }

    /// Nothing is sent, and no socket opened, until the first round trip.
    public init(configuration: RedisConfiguration, eventLoop: any EventLoop, logger: Logger) {
        precondition(!configuration.cluster, "EventLoopRedisConnection serves one server; a cluster needs RedisConnection")
        self.configuration = configuration
        self.eventLoop = eventLoop
        self.logger = logger
        self.state = NIOLoopBoundBox.makeBoxSendingValue(
            State(slotGuard: configuration.checksSlots ? SlotGuard() : nil), eventLoop: eventLoop)
    }

    /// Sends all commands in one round trip and returns one reply per command, in order, error replies
    /// included. Throws `RedisError`: `connectionFailed`, `io` (the socket failed or the reply was late:
    /// nothing is known of these commands), `protocolError`, `closed`, `invalidArgument`, `crossSlot`.
    public func pipeline(_ commands: [RedisCommand]) async throws -> [RedisReply] {
        if commands.isEmpty { return [] }
        if self.eventLoop.inEventLoop { return try await self.send(commands).get() }
        return try await self.eventLoop.flatSubmit { self.send(commands) }.get()
    }

    /// Closes the socket; round trips waiting throw `io`, later calls throw `closed`.
    public func close() async {
        let connection = try? await self.eventLoop.submit { () -> EventLoopFuture<NIOLoopBound<RedisReplyHandler>>? in
            self.state.value.isClosed = true
            return self.state.value.connection
        }.get()
        guard let handler = try? await connection?.get() else { return }
        try? await self.eventLoop.submit { handler.value.close() }.get()
    }

    /// On the loop: checks, connects if need be, writes.
    private func send(_ commands: [RedisCommand]) -> EventLoopFuture<[RedisReply]> {
        do {
            try RedisCommand.refuseEmpty(commands)
            // Publishes carry no WATCH, but the guard's rules are the same on every transport.
            if let slotGuard = self.state.value.slotGuard { _ = try slotGuard.check(commands) }
        } catch {
            return self.eventLoop.makeFailedFuture(error)
        }
        // The common case, an open socket, without a future in between.
        if let ready = self.state.value.ready, ready.value.isUsable { return ready.value.send(commands) }
        return self.connected().flatMap { handler in handler.value.send(commands) }
    }

    /// On the loop: the open socket's handler, or a socket being opened (one at a time).
    private func connected() -> EventLoopFuture<NIOLoopBound<RedisReplyHandler>> {
        if self.state.value.isClosed { return self.eventLoop.makeFailedFuture(RedisError(.closed, "connection closed")) }
        if let connection = self.state.value.connection {
            // A socket that failed (late reply, I/O error) is never reused, even before its close completes.
            guard let ready = self.state.value.ready, !ready.value.isUsable else { return connection }
            self.state.value.connection = nil
            self.state.value.ready = nil
        }
        let configuration = self.configuration
        let eventLoop = self.eventLoop
        let timeout = TimeAmount.milliseconds(Int64(configuration.commandTimeoutMilliseconds))
        let opening = ClientBootstrap(group: eventLoop)
            .connectTimeout(.milliseconds(Int64(configuration.connectTimeoutMilliseconds)))
            .channelOption(.socketOption(.so_keepalive), value: 1)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(RedisReplyHandler(timeout: timeout))
                }
            }
            .connect(host: configuration.host, port: configuration.port)
            .flatMapErrorThrowing { error in
                throw RedisError(.connectionFailed, "connect to \(configuration.host):\(configuration.port) failed: \(error)")
            }
            .flatMapThrowing { channel in
                NIOLoopBound(try channel.pipeline.syncOperations.handler(type: RedisReplyHandler.self), eventLoop: eventLoop)
            }
            .flatMap { handler in self.handshake(handler).map { handler } }
        self.state.value.connection = opening
        opening.whenComplete { result in
            switch result {
            case .success(let handler):
                if self.state.value.connection === opening { self.state.value.ready = handler }
                self.logger.debug(
                    "redis connected", metadata: ["redis.host": "\(configuration.host)", "redis.port": "\(configuration.port)"])
                // Any drop (I/O error, late reply, the server closing) makes the next call reconnect.
                handler.value.closeFuture.whenComplete { _ in self.forget(opening) }
            case .failure:
                self.forget(opening)
            }
        }
        return opening
    }

    private func forget(_ connection: EventLoopFuture<NIOLoopBound<RedisReplyHandler>>) {
        if self.state.value.connection === connection {
            self.state.value.connection = nil
            self.state.value.ready = nil
        }
    }

    /// AUTH and SELECT, as `HiredisContext` sends them, before any caller's command.
    private func handshake(_ handler: NIOLoopBound<RedisReplyHandler>) -> EventLoopFuture<Void> {
        let configuration = self.configuration
        let commands = configuration.handshake
        guard !commands.isEmpty else { return self.eventLoop.makeSucceededVoidFuture() }
        return handler.value.send(commands).flatMapThrowing { replies in
            if let failure = configuration.handshakeFailure(replies) {
                handler.value.close()
                throw failure
            }
        }
    }
}
