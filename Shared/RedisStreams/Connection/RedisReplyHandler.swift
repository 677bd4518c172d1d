import CHiredis
import NIOCore
import TLSClient

/// The channel handler of an `EventLoopRedisConnection`: writes pipelines in RESP and pairs the replies
/// that come back, in order, with the round trips that asked for them.
///
/// Replies are parsed by hiredis's reader (the same parser `RedisConnection` uses, without its socket
/// code), then copied into `RedisReply`. Any failure (the socket, a reply no round trip asked for, an
/// unparsable byte, a reply later than `timeout`) fails every round trip waiting and closes the
/// channel: after a lost reply the rest could not be paired with their commands.
final class RedisReplyHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private struct RoundTrip {
        let count: Int
        let promise: EventLoopPromise<[RedisReply]>
        let sent: NIODeadline
    }

    private let timeout: TimeAmount
    /// Whether a `TLSClientHandler` sits before this one: what a server closing at once most likely means.
    private let isTLS: Bool
    /// Whether any reply came on this socket.
    private var answered = false
    private let reader: UnsafeMutablePointer<redisReader>
    private var context: ChannelHandlerContext?
    private var waiting = CircularBuffer<RoundTrip>()
    /// The replies come so far for the first round trip waiting. Kept out of `waiting`: appending to an
    /// array inside a `CircularBuffer` element copies the array each time (its subscript has no
    /// in-place accessor), quadratic in a pipeline's length (a stage's transaction of a thousand
    /// commands cost the scheduler three quarters more CPU than the blocking transport).
    private var replies: [RedisReply] = []
    /// Why the channel is unusable; every later round trip fails with it at once.
    private var failure: RedisError?
    private var timeoutCheck: RepeatedTask?

    init(timeout: TimeAmount, isTLS: Bool = false) {
        self.timeout = timeout
        self.isTLS = isTLS
        self.reader = redisReaderCreate()
    }

    deinit { redisReaderFree(self.reader) }

    /// Whether round trips can still be sent: false from the first failure on.
    var isUsable: Bool { self.failure == nil }

    /// Completes when the channel has closed.
    var closeFuture: EventLoopFuture<Void> {
        self.context!.channel.closeFuture
    }

    /// On the loop: writes `commands` as one pipeline; the future has one reply per command, in order.
    func send(_ commands: [RedisCommand]) -> EventLoopFuture<[RedisReply]> {
        // `context` is set before the connection can reach this handler (`handlerAdded`), and kept.
        let context = self.context!
        if let failure = self.failure { return context.eventLoop.makeFailedFuture(failure) }
        var buffer = context.channel.allocator.buffer(capacity: RESP.size(of: commands))
        RESP.write(commands, into: &buffer)
        let promise = context.eventLoop.makePromise(of: [RedisReply].self)
        if self.waiting.isEmpty { self.replies.reserveCapacity(commands.count) }
        self.waiting.append(RoundTrip(count: commands.count, promise: promise, sent: .now()))
        context.writeAndFlush(self.wrapOutboundOut(buffer), promise: nil)
        return promise.futureResult
    }

    /// On the loop: closes the channel, failing whatever waits.
    func close() {
        self.fail(RedisError(.closed, "connection closed"))
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        // One check every quarter timeout, rather than a timer per round trip: a late reply is noticed
        // within 1.25 × the timeout, and an idle connection costs four wake-ups per timeout.
        let period = TimeAmount.nanoseconds(max(self.timeout.nanoseconds / 4, 1_000_000))
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        self.timeoutCheck = context.eventLoop.scheduleRepeatedTask(initialDelay: period, delay: period) { _ in
            loopBound.value.checkTimeout()
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.timeoutCheck?.cancel()
        self.timeoutCheck = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = self.unwrapInboundIn(data)
        let fed = buffer.withUnsafeReadableBytes { bytes in
            redisReaderFeed(self.reader, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), bytes.count)
        }
        guard fed == REDIS_OK else { return self.fail(self.readerError(doing: "reading replies")) }
        while self.failure == nil {
            var raw: UnsafeMutableRawPointer?
            guard redisReaderGetReply(self.reader, &raw) == REDIS_OK else {
                return self.fail(self.readerError(doing: "reading a reply"))
            }
            guard let raw else { return }
            self.answered = true
            let reply = RedisReply(copying: raw.assumingMemoryBound(to: redisReply.self))
            freeReplyObject(raw)
            guard !self.waiting.isEmpty else {
                return self.fail(RedisError(.protocolError, "a reply came that no command asked for"))
            }
            self.replies.append(reply)
            if self.replies.count == self.waiting[self.waiting.startIndex].count {
                let done = self.waiting.removeFirst()
                let replies = self.replies
                self.replies = []
                if let next = self.waiting.first { self.replies.reserveCapacity(next.count) }
                done.promise.succeed(replies)
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !self.answered, !self.isTLS, !self.waiting.isEmpty {
            // A TLS port drops a client that speaks RESP at it without a word.
            self.fail(RedisError(.tlsFailed, Self.plaintextAtTLSPort))
        }
        self.fail(RedisError(.io, "the server closed the connection"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? TLSClientError {
            // The certificate, the name, the protocol: a connection that never carried a command.
            self.fail(RedisError(.tlsFailed, "TLS failed: \(error)"))
        } else if !self.answered, !self.isTLS, !self.waiting.isEmpty {
            self.fail(RedisError(.tlsFailed, "\(Self.plaintextAtTLSPort) (\(error))"))
        } else {
            self.fail(RedisError(.io, "socket error: \(error)"))
        }
    }

    /// What a server that drops a new plaintext client before any reply most likely is.
    static let plaintextAtTLSPort =
        "the server closed the connection before answering (a TLS port behind a redis:// URL? use rediss://)"

    private func checkTimeout() {
        guard let oldest = self.waiting.first, oldest.sent + self.timeout < .now() else { return }
        let milliseconds = self.timeout.nanoseconds / 1_000_000
        if self.isTLS, !self.answered {
            // A plaintext server reads a TLS client hello as the start of a command and waits for its end;
            // so does a Redis busy with a long script. A hint, not a verdict: retried as any timeout.
            self.fail(
                RedisError(
                    .io, "no TLS handshake or reply within \(milliseconds) ms (a plaintext server behind a rediss:// URL?)"))
        } else {
            self.fail(RedisError(.io, "no reply within \(milliseconds) ms"))
        }
    }

    /// Fails every round trip waiting, and closes the channel (once).
    private func fail(_ error: RedisError) {
        if self.failure == nil {
            self.failure = error
            self.context?.close(promise: nil)
        }
        self.replies = []
        while let trip = self.waiting.popFirst() { trip.promise.fail(self.failure ?? error) }
    }

    private func readerError(doing action: String) -> RedisError {
        let message = withUnsafeBytes(of: self.reader.pointee.errstr) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        return RedisError(.protocolError, "\(action) failed: \(message)")
    }
}

/// RESP2 requests: each command an array of bulk strings, as hiredis's `redisAppendCommandArgv` writes it.
enum RESP {
    /// Bytes `write` needs for `commands`, give or take the digits.
    static func size(of commands: [RedisCommand]) -> Int {
        commands.reduce(0) { total, command in
            command.arguments.reduce(total + 16) { $0 + $1.count + 16 }
        }
    }

    static func write(_ commands: [RedisCommand], into buffer: inout ByteBuffer) {
        for command in commands {
            buffer.writeInteger(UInt8(ascii: "*"))
            self.writeDecimal(command.arguments.count, into: &buffer)
            for argument in command.arguments {
                buffer.writeInteger(UInt8(ascii: "$"))
                self.writeDecimal(argument.count, into: &buffer)
                buffer.writeBytes(argument)
                buffer.writeInteger(UInt8(ascii: "\r"))
                buffer.writeInteger(UInt8(ascii: "\n"))
            }
        }
    }

    /// `value` in decimal, then CRLF (a String this short is stored inline: no allocation).
    private static func writeDecimal(_ value: Int, into buffer: inout ByteBuffer) {
        buffer.writeString(String(value))
        buffer.writeInteger(UInt8(ascii: "\r"))
        buffer.writeInteger(UInt8(ascii: "\n"))
    }
}
