import COpenSSL
import NIOCore

/// A TLS client in a channel's pipeline, on OpenSSL with two memory BIOs: the bytes the channel reads go
/// into OpenSSL, what OpenSSL writes goes out on the channel, and the handlers after this one read and
/// write plain bytes. Writes made before the handshake completes wait for it.
///
/// The handshake starts when the channel is active, verifies the certificate (`TLSClientContext`) and
/// checks it names the server: `serverHostname` (sent as SNI too), or with none the address connected
/// to. A failure closes the channel after `errorCaught` with `TLSClientError` (OpenSSL's reason: an
/// unknown CA, a name mismatch, an expired certificate, a peer that does not speak TLS), and fails the
/// writes waiting for the handshake with it.
public final class TLSClientHandler: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = ByteBuffer
    public typealias OutboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    private enum State {
        case idle
        case handshaking
        case active
        case closed
    }

    private let context: TLSClientContext
    private let serverHostname: String?
    private var ssl: OpaquePointer?
    private var readBIO: OpaquePointer?
    private var writeBIO: OpaquePointer?
    private var state = State.idle
    /// Writes waiting for the handshake (or for the next flush once active).
    private var pending: [(ByteBuffer, EventLoopPromise<Void>?)] = []
    private var flushPending = false

    public init(context: TLSClientContext, serverHostname: String?) {
        self.context = context
        self.serverHostname = serverHostname
    }

    deinit {
        if let ssl { SSL_free(ssl) }  // frees both BIOs
    }

    public func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context) }
    }

    public func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    public func channelInactive(context: ChannelHandlerContext) {
        let error = TLSClientError(state == .active ? "connection closed" : "connection closed during the TLS handshake")
        state = .closed
        failPending(error)
        context.fireChannelInactive()
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard state == .handshaking || state == .active, let readBIO else { return }
        let bytes = unwrapInboundIn(data)
        _ = bytes.withUnsafeReadableBytes { BIO_write(readBIO, $0.baseAddress, Int32($0.count)) }
        if state == .handshaking { handshake(context) }
        if state == .active { readPlaintext(context) }
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard state != .closed else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        pending.append((unwrapOutboundIn(data), promise))
    }

    public func flush(context: ChannelHandlerContext) {
        flushPending = true
        if state == .active { writePending(context) }
    }

    public func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        if state == .active, mode == .all, let ssl {
            // close_notify, so the server knows the connection ended here and was not cut.
            _ = SSL_shutdown(ssl)
            sendCiphertext(context, promise: nil)
            context.flush()
        }
        state = .closed
        failPending(ChannelError.ioOnClosedChannel)
        context.close(mode: mode, promise: promise)
    }

    // MARK: - TLS

    private func start(_ context: ChannelHandlerContext) {
        guard state == .idle else { return }
        do {
            let ssl = try self.context.connection(
                serverHostname: serverHostname, address: context.channel.remoteAddress?.ipAddress)
            guard let readBIO = BIO_new(BIO_s_mem()), let writeBIO = BIO_new(BIO_s_mem()) else {
                SSL_free(ssl)
                throw TLSClientError.openSSL("BIO_new")
            }
            SSL_set_bio(ssl, readBIO, writeBIO)
            SSL_set_connect_state(ssl)
            (self.ssl, self.readBIO, self.writeBIO) = (ssl, readBIO, writeBIO)
            state = .handshaking
            handshake(context)
        } catch {
            fail(context, error)
        }
    }

    private func handshake(_ context: ChannelHandlerContext) {
        guard let ssl else { return }
        // OpenSSL's error queue is the thread's: what an earlier call left there is not this failure.
        ERR_clear_error()
        let result = SSL_do_handshake(ssl)
        sendCiphertext(context, promise: nil)
        context.flush()
        if result == 1 {
            state = .active
            if flushPending { writePending(context) }
            return
        }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return
        default:
            fail(context, TLSClientError.openSSL("TLS handshake failed", verifyResult: SSL_get_verify_result(ssl)))
        }
    }

    private func readPlaintext(_ context: ChannelHandlerContext) {
        guard let ssl else { return }
        while state == .active {
            var buffer = context.channel.allocator.buffer(capacity: 16_384)
            var result: Int32 = 0
            ERR_clear_error()
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 16_384) { bytes in
                result = SSL_read(ssl, bytes.baseAddress, Int32(clamping: bytes.count))
                return Int(max(result, 0))
            }
            if result > 0 {
                context.fireChannelRead(wrapInboundOut(buffer))
                continue
            }
            // TLS 1.3 may answer what it read (a key update): send it.
            sendCiphertext(context, promise: nil)
            context.flush()
            switch SSL_get_error(ssl, result) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return
            case SSL_ERROR_ZERO_RETURN:
                // The server's close_notify: the connection ends cleanly.
                context.close(promise: nil)
            default:
                fail(context, TLSClientError.openSSL("TLS read failed"))
            }
            return
        }
    }

    private func writePending(_ context: ChannelHandlerContext) {
        guard let ssl else { return }
        flushPending = false
        ERR_clear_error()
        let writes = pending
        pending = []
        for (index, (bytes, promise)) in writes.enumerated() {
            let written = bytes.withUnsafeReadableBytes { plain in
                plain.isEmpty ? 0 : SSL_write(ssl, plain.baseAddress, Int32(clamping: plain.count))
            }
            guard written == bytes.readableBytes else {
                let error = TLSClientError.openSSL("TLS write failed")
                promise?.fail(error)
                for (_, later) in writes.dropFirst(index + 1) { later?.fail(error) }
                fail(context, error)
                return
            }
            sendCiphertext(context, promise: promise)
        }
        context.flush()
    }

    /// What OpenSSL has written (handshake records, encrypted data, alerts) onto the channel.
    private func sendCiphertext(_ context: ChannelHandlerContext, promise: EventLoopPromise<Void>?) {
        guard let writeBIO else {
            promise?.succeed()
            return
        }
        let count = Int(BIO_ctrl_pending(writeBIO))
        guard count > 0 else {
            promise?.succeed()
            return
        }
        var buffer = context.channel.allocator.buffer(capacity: count)
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { bytes in
            Int(max(BIO_read(writeBIO, bytes.baseAddress, Int32(count)), 0))
        }
        context.write(wrapOutboundOut(buffer), promise: promise)
    }

    private func fail(_ context: ChannelHandlerContext, _ error: any Error) {
        guard state != .closed else { return }
        state = .closed
        failPending(error)
        context.fireErrorCaught(error)
        context.close(promise: nil)
    }

    private func failPending(_ error: any Error) {
        let writes = pending
        pending = []
        for (_, promise) in writes { promise?.fail(error) }
    }
}

@available(*, unavailable)
extension TLSClientHandler: Sendable {}
