import CHiredis
import Logging

/// The hiredis context of one `RedisConnection`, created lazily and dropped after any I/O error.
///
/// hiredis contexts are not thread-safe, so this type has no locks: every method runs on the
/// connection's single pool thread, which serialises all access (hence `@unchecked Sendable`).
final class HiredisContext: @unchecked Sendable {
    private let configuration: RedisConfiguration
    private let logger: Logger
    private var context: UnsafeMutablePointer<redisContext>?
    private var isClosed = false
    /// Whether the socket in use has answered anything yet.
    private var answered = false

    init(configuration: RedisConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// Sends every command in one write, then reads one reply per command: one round trip.
    func execute(_ commands: [RedisCommand]) throws -> [RedisReply] {
        try self.write(commands)
        return try self.read(count: commands.count)
    }

    /// Connects now unless connected: cluster routing opens every node of a pipeline before writing to any,
    /// so a node that refuses fails the call before another node has run part of it.
    func connect() throws {
        _ = try self.connected()
    }

    /// The first half of `execute`: queues every command and flushes the socket without reading, so
    /// several nodes can work on their parts of a pipeline at once; `read(count:)` collects the replies.
    func write(_ commands: [RedisCommand]) throws {
        try RedisCommand.refuseEmpty(commands)
        let context = try self.connected()
        do {
            for command in commands {
                try Self.append(command, to: context)
            }
            var done: Int32 = 0
            while done == 0 {
                if redisBufferWrite(context, &done) != REDIS_OK {
                    throw Self.ioError(context, doing: "writing \(commands.count) commands")
                }
            }
        } catch {
            // A half-written buffer would pair later replies with the wrong commands.
            self.drop()
            throw error
        }
    }

    /// The second half of `execute`: reads `count` replies to commands sent with `write(_:)`.
    func read(count: Int) throws -> [RedisReply] {
        if self.isClosed { throw RedisError(.closed, "connection closed") }
        // Never reconnect here: a fresh socket has no replies coming and would wait out the timeout.
        guard let context = self.context else {
            throw RedisError(.io, "reading replies failed: the connection was dropped after writing")
        }
        do {
            let replies = try (0..<count).map { _ in try Self.readReply(from: context) }
            self.answered = true
            return replies
        } catch let error as RedisError
            where !self.answered && error.code == .io
            && (error.message.contains("Server closed the connection") || error.message.contains("Connection reset by peer"))
        {
            // A TLS port drops a client that speaks RESP at it without a word.
            self.drop()
            throw RedisError(.tlsFailed, "\(RedisReplyHandler.plaintextAtTLSPort) (\(error.message))")
        } catch {
            self.drop()
            throw error
        }
    }

    /// Frees the context for good; later calls throw `closed`.
    func close() {
        self.isClosed = true
        self.drop()
    }

    private func drop() {
        if let context = self.context {
            redisFree(context)
            self.context = nil
            self.logger.debug("redis connection dropped")
        }
    }

    private func connected() throws -> UnsafeMutablePointer<redisContext> {
        if self.isClosed { throw RedisError(.closed, "connection closed") }
        if let context = self.context { return context }
        // hiredis 0.14 has no TLS: a configuration that asks for it is never served in plaintext.
        guard self.configuration.tls == nil else {
            throw RedisError(.invalidConfiguration, "TLS (rediss://) is not available on this connection")
        }

        let configuration = self.configuration
        guard
            let context = redisConnectWithTimeout(
                configuration.host,
                Int32(clamping: configuration.port),
                Self.timeval(milliseconds: configuration.connectTimeoutMilliseconds)
            )
        else {
            throw RedisError(.connectionFailed, "cannot allocate a hiredis context")
        }
        if context.pointee.err != 0 {
            let message = Self.errorString(context)
            redisFree(context)
            throw RedisError(
                .connectionFailed,
                "connect to \(configuration.host):\(configuration.port) failed: \(message)"
            )
        }
        // Without a read timeout a dead server would block this thread forever.
        if redisSetTimeout(context, Self.timeval(milliseconds: configuration.commandTimeoutMilliseconds)) != REDIS_OK {
            let message = Self.errorString(context)
            redisFree(context)
            throw RedisError(.connectionFailed, "setting the command timeout failed: \(message)")
        }
        _ = redisEnableKeepAlive(context)
        self.context = context
        self.answered = false

        let handshake = configuration.handshake
        if !handshake.isEmpty, let failure = configuration.handshakeFailure(try self.execute(handshake)) {
            self.drop()
            throw failure
        }
        self.logger.debug(
            "redis connected",
            metadata: ["redis.host": "\(configuration.host)", "redis.port": "\(configuration.port)"]
        )
        return context
    }

    private static func append(_ command: RedisCommand, to context: UnsafeMutablePointer<redisContext>) throws {
        // One contiguous buffer for all arguments: argv points into it, hiredis copies during the call.
        var buffer: [UInt8] = []
        buffer.reserveCapacity(command.arguments.reduce(1) { $0 + $1.count })
        var offsets: [Int] = []
        var lengths: [Int] = []
        for argument in command.arguments {
            offsets.append(buffer.count)
            lengths.append(argument.count)
            buffer.append(contentsOf: argument)
        }
        buffer.append(0)  // never empty, so baseAddress is never nil

        let status = buffer.withUnsafeBufferPointer { bytes -> Int32 in
            let base = UnsafeRawPointer(bytes.baseAddress!)
            var argv: [UnsafePointer<CChar>?] = offsets.map {
                base.advanced(by: $0).assumingMemoryBound(to: CChar.self)
            }
            return argv.withUnsafeMutableBufferPointer { argvPointer in
                lengths.withUnsafeBufferPointer { lengthPointer in
                    redisAppendCommandArgv(
                        context,
                        Int32(command.arguments.count),
                        argvPointer.baseAddress,
                        lengthPointer.baseAddress
                    )
                }
            }
        }
        if status != REDIS_OK {
            throw Self.ioError(context, doing: "queueing \(command.name)")
        }
    }

    private static func readReply(from context: UnsafeMutablePointer<redisContext>) throws -> RedisReply {
        var raw: UnsafeMutableRawPointer?
        guard redisGetReply(context, &raw) == REDIS_OK, let raw else {
            throw Self.ioError(context, doing: "reading a reply")
        }
        defer { freeReplyObject(raw) }
        return RedisReply(copying: raw.assumingMemoryBound(to: redisReply.self))
    }

    private static func ioError(_ context: UnsafeMutablePointer<redisContext>, doing action: String) -> RedisError {
        let message = "\(action) failed: \(Self.errorString(context))"
        switch context.pointee.err {
        case REDIS_ERR_PROTOCOL: return RedisError(.protocolError, message)
        default: return RedisError(.io, message)
        }
    }

    private static func errorString(_ context: UnsafeMutablePointer<redisContext>) -> String {
        withUnsafeBytes(of: context.pointee.errstr) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
    }

    private static func timeval(milliseconds: Int) -> timeval {
        var value = CHiredis.timeval()
        value.tv_sec = .init(milliseconds / 1000)
        value.tv_usec = .init((milliseconds % 1000) * 1000)
        return value
    }
}
