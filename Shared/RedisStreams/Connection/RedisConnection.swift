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
public final class RedisConnection: Sendable {
    /// Where this connection goes.
    public let configuration: RedisConfiguration
    private let logger: Logger
    private let threadPool: NIOThreadPool
    private let context: HiredisContext
    private let isClosed = Atomic<Bool>(false)

    /// Creates the connection and its thread; nothing is sent until the first command.
    public init(configuration: RedisConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        self.context = HiredisContext(configuration: configuration, logger: logger)
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
            self.context.close()
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

    /// Sends all commands in one round trip and returns one reply per command, error replies included.
    public func pipeline(_ commands: [RedisCommand]) async throws -> [RedisReply] {
        if commands.isEmpty { return [] }
        return try await self.onConnectionThread { context in
            try context.execute(commands)
        }
    }

    /// Closes the socket and stops the thread; calls already queued finish first, later calls throw `closed`.
    public func close() async {
        guard self.isClosed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        let context = self.context
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            self.threadPool.submit { _ in
                context.close()
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
        _ body: @escaping @Sendable (HiredisContext) throws -> T
    ) async throws -> T {
        if self.isClosed.load(ordering: .acquiring) {
            throw RedisError(.closed, "connection closed")
        }
        let context = self.context
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            self.threadPool.submit { state in
                guard case .active = state else {
                    continuation.resume(throwing: RedisError(.closed, "connection closed"))
                    return
                }
                continuation.resume(with: Result { try body(context) })
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
