import Logging
import NIOCore
import NIOPosix
import TLSClient

/// A connection to one Redis server whose socket is driven by a NIO event loop: the pipeline's one Redis
/// transport. `RedisConnection` sends a node's commands through one, and its cluster routing one per
/// node; ingest's request handlers call one on their own loop, with no thread hand-off at all.
///
/// Replies are parsed by hiredis's reader (`RedisReplyHandler`). This connects on first use (TLS, then
/// AUTH and SELECT), drops the socket after any I/O error or a reply later than
/// `commandTimeoutMilliseconds` (the round trips then waiting throw `io`), and reconnects on the next
/// call. With `configuration.tls` every socket is TLS (`TLSClientHandler`, the system's OpenSSL): the
/// server's certificate verified against the trust roots and its name (or address) checked; a
/// certificate that fails fails the connection with OpenSSL's reason (`connectionFailed`), never falls
/// back to plaintext. One server only: Redis Cluster's routing, redirections and failover are
/// `ClusterRouter`'s.
public final class EventLoopRedisConnection: Sendable {
    /// Where this connection goes.
    public let configuration: RedisConfiguration
    /// The loop that owns the socket; round trips asked for on it need no hop.
    public let eventLoop: any EventLoop
    private let logger: Logger
    private let state: NIOLoopBoundBox<State>
    /// The TLS context every socket uses, or why there is none although `configuration.tls` asks for one.
    private let tls: Result<TLSClientContext, RedisError>?

    private struct State {
        /// The handler of the socket in use or being opened; nil before the first call and after a drop.
        var connection: EventLoopFuture<NIOLoopBound<RedisReplyHandler>>?
        /// That socket's handler, once open.
        var ready: NIOLoopBound<RedisReplyHandler>?
        var isClosed = false
        /// The socket this connection's outstanding WATCH went out on. The server forgets a WATCH with
        /// its socket, so the first call after that socket is gone fails rather than letting a
        /// transaction run unguarded on a new one; the caller reads and watches again.
        var watchedOn: RedisReplyHandler?
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
        self.tls = configuration.tls.map { tls in
            Result { () throws(RedisError) -> TLSClientContext in
                do { return try TLSClientContext(tls) } catch {
                    throw RedisError(.invalidConfiguration, "redis TLS: \(error)")
                }
            }
        }
    }

    /// A connection on one of NIO's shared loops (`MultiThreadedEventLoopGroup.singleton`).
    public convenience init(configuration: RedisConfiguration, logger: Logger) {
        self.init(configuration: configuration, eventLoop: MultiThreadedEventLoopGroup.singleton.next(), logger: logger)
    }

    /// Sends all commands in one round trip and returns one reply per command, in order, error replies
    /// included. Throws `RedisError`: `connectionFailed`, `io` (the socket failed or the reply was late:
    /// nothing is known of these commands), `protocolError`, `closed`, `invalidArgument`, `crossSlot`.
    public func pipeline(_ commands: [RedisCommand]) async throws -> [RedisReply] {
        if commands.isEmpty { return [] }
        if self.eventLoop.inEventLoop { return try await self.send(commands).get() }
        // One hop to the loop and one back: `flatSubmit(…).get()` would hop to the loop a second time to
        // register its callback.
        return try await withCheckedThrowingContinuation { continuation in
            self.eventLoop.execute { self.send(commands).whenComplete { continuation.resume(with: $0) } }
        }
    }

    /// `pipeline` as a future, for callers that wait on a thread of their own (cluster routing).
    func replies(to commands: [RedisCommand]) -> EventLoopFuture<[RedisReply]> {
        if self.eventLoop.inEventLoop { return self.send(commands) }
        return self.eventLoop.flatSubmit { self.send(commands) }
    }

    /// Connects now unless connected (TLS, AUTH and SELECT included).
    func connect() -> EventLoopFuture<Void> {
        self.eventLoop.flatSubmit {
            if let ready = self.state.value.ready, ready.value.isUsable { return self.eventLoop.makeSucceededVoidFuture() }
            return self.connected().map { _ in () }
        }
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

    /// `close` without waiting for it, from any thread (a dropped cluster node, a connection's `deinit`).
    func closeSoon() {
        self.eventLoop.execute {
            self.state.value.isClosed = true
            self.state.value.connection?.whenSuccess { handler in handler.value.close() }
        }
    }

    /// On the loop: checks, connects if need be, writes.
    private func send(_ commands: [RedisCommand]) -> EventLoopFuture<[RedisReply]> {
        do {
            try RedisCommand.refuseEmpty(commands)
            if let slotGuard = self.state.value.slotGuard {
                let slots = try slotGuard.check(commands)
                return self.sent(commands).always { result in
                    switch result {
                    case .success(let replies): slotGuard.record(commands, slots: slots, replies: replies)
                    // The socket is gone, and the server's WATCH with it.
                    case .failure: slotGuard.reset()
                    }
                }
            }
        } catch {
            return self.eventLoop.makeFailedFuture(error)
        }
        return self.sent(commands)
    }

    /// On the loop: writes on the open socket, or on a new one.
    private func sent(_ commands: [RedisCommand]) -> EventLoopFuture<[RedisReply]> {
        let ready = self.state.value.ready.flatMap { $0.value.isUsable ? $0.value : nil }
        if let watched = self.state.value.watchedOn, watched !== ready {
            // Even when a call in flight on that socket failed: it may have been another caller's.
            self.state.value.watchedOn = nil
            return self.eventLoop.makeFailedFuture(
                RedisError(.io, "the connection that held a WATCH was dropped; nothing was sent"))
        }
        guard let watch = RedisCommand.watchEffect(of: commands) else {
            // The common case, an open socket, without a future in between.
            if let ready { return ready.send(commands) }
            return self.connected().flatMap { handler in handler.value.send(commands) }
        }
        if let ready { return self.watching(NIOLoopBound(ready, eventLoop: self.eventLoop), commands, watch) }
        return self.connected().flatMap { handler in self.watching(handler, commands, watch) }
    }

    /// On the loop: sends a pipeline that starts (`watch`) or ends a WATCH, which counts once the
    /// server answered it: a pipeline that failed told its caller already.
    private func watching(
        _ handler: NIOLoopBound<RedisReplyHandler>, _ commands: [RedisCommand], _ watch: Bool
    ) -> EventLoopFuture<[RedisReply]> {
        handler.value.send(commands).map { replies in
            self.state.value.watchedOn = watch ? handler.value : nil
            return replies
        }
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
        let tls: TLSClientContext?
        switch self.tls {
        case .failure(let error)?: return eventLoop.makeFailedFuture(error)
        case .success(let context)?: tls = context
        case nil: tls = nil
        }
        let serverName = configuration.tlsName(for: configuration.host)
        let opening = ClientBootstrap(group: eventLoop)
            .connectTimeout(.milliseconds(Int64(configuration.connectTimeoutMilliseconds)))
            .channelOption(.socketOption(.so_keepalive), value: 1)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls {
                        try channel.pipeline.syncOperations.addHandler(TLSClientHandler(context: tls, serverHostname: serverName))
                    }
                    try channel.pipeline.syncOperations.addHandler(RedisReplyHandler(timeout: timeout, isTLS: tls != nil))
                }
            }
            .connect(host: configuration.host, port: configuration.port)
            .flatMapErrorThrowing { error in
                throw RedisError(.connectionFailed, "connect to \(configuration.url) failed: \(error)")
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

    /// AUTH and SELECT before any caller's command; over TLS at least a PING, so that the TLS handshake
    /// (and a certificate it refuses) belongs to connecting, not to the first caller's commands.
    private func handshake(_ handler: NIOLoopBound<RedisReplyHandler>) -> EventLoopFuture<Void> {
        let configuration = self.configuration
        var commands = configuration.handshake
        if commands.isEmpty, configuration.tls != nil { commands = [RedisCommand("PING")] }
        guard !commands.isEmpty else { return self.eventLoop.makeSucceededVoidFuture() }
        return handler.value.send(commands).flatMapThrowing { replies in
            if let failure = configuration.handshakeFailure(replies) {
                handler.value.close()
                throw failure
            }
        }
    }
}
