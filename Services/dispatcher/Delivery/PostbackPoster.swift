import AttributionModel
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization
import TLSClient

/// The dispatcher's HTTP/1.1 client: one POST per call over pooled keep-alive connections, each
/// connected to exactly the endpoint it is given.
///
/// Why not AsyncHTTPClient, which this replaced: a postback is a small body, one status to read and no
/// redirect to follow, and AsyncHTTPClient's general request path (URL parsing, tracing, its
/// connection pool's state machines, a body stream that writes head and body as two segments) was
/// three quarters of the dispatcher's CPU, about 110 µs per postback on the benchmark's machine. Here
/// head and body leave in one write.
///
/// What it keeps of the guarantees the destination check relies on:
/// - An endpoint with an `address` (a name pinned to its checked DNS answer) connects to that address
///   and no other, keeping the name for `Host`, TLS SNI and the certificate check; one without it (an
///   IP literal, or an allow-listed host) connects to the host as it is.
/// - Nothing is followed: a 3xx is an answer like any other.
/// - `https` verifies the certificate chain against the system's roots and the name (or, for an IP
///   literal, the address) against the certificate.
public final class PostbackPoster: Sendable {
    /// Where one POST goes: connections are pooled per endpoint, so a new checked address never reuses a
    /// connection made to the old one.
    public struct Endpoint: Sendable, Hashable {
        public var secure: Bool
        /// Lowercased, without IPv6 brackets.
        public var host: String
        public var port: Int
        /// The address to connect to instead of resolving `host` (nil: connect to `host` as it is).
        public var address: IPAddress?

        /// The `Host` header: the port only when it is not the scheme's own, IPv6 in brackets.
        var hostHeader: String {
            let name = host.contains(":") ? "[\(host)]" : host
            return port == (secure ? 443 : 80) ? name : "\(name):\(port)"
        }
    }

    /// How a POST ended.
    public enum Outcome: Sendable, Equatable {
        /// The server answered with this status (any, 3xx included: nothing is followed).
        case answered(status: Int)
        /// No answer: refused connection, TLS failure, timeout, reset; described.
        case failed(String)
    }

    private let group: any EventLoopGroup
    /// The loops the connections run on (a caller's tasks may prefer them, saving a hop per answer).
    public var eventLoopGroup: any EventLoopGroup { group }
    private let tls: TLSClientContext
    private let idleTimeout: TimeAmount
    /// Idle connections by endpoint, newest last.
    private let idle = Mutex<[Endpoint: [any Channel]]>([:])
    /// Connections kept idle per endpoint; past it a finished one is closed.
    private let idlePerEndpoint: Int
    /// Endpoints with idle connections kept; a finished connection to a further one is closed.
    private let endpointCapacity: Int
    /// The body a response may have before its connection is given up (the status is all that is read).
    static let responseBodyLimit = 64 * 1024

    /// - Parameters:
    ///   - idleTimeout: how long an unused connection stays open.
    ///   - tlsConfiguration: the client TLS settings (the default verifies against the system's roots).
    public init(
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, idleTimeout: TimeAmount = .seconds(60),
        idlePerEndpoint: Int = 64, endpointCapacity: Int = 256,
        tlsConfiguration: TLSClientConfiguration = TLSClientConfiguration()
    ) throws {
        self.group = group
        self.idleTimeout = idleTimeout
        self.idlePerEndpoint = max(1, idlePerEndpoint)
        self.endpointCapacity = max(1, endpointCapacity)
        self.tls = try TLSClientContext(tlsConfiguration)
    }

    /// POSTs `body` to `target` (path and query) at `endpoint`, within `timeout` for the whole attempt
    /// (connecting, sending, the answer's head and body).
    ///
    /// A connection taken from the pool that turns out closed before any answer (the server dropped it
    /// while idle) is retried once on a new connection: the attempt is not the server's failure. The
    /// body may then reach the server twice, which a receiver deduplicates on postback-identifier as it
    /// does any retry.
    public func post(
        _ body: ByteBuffer, target: String, to endpoint: Endpoint, headers: [(String, String)], timeout: TimeAmount
    ) async -> Outcome {
        let deadline = NIODeadline.now() + timeout
        var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: target)
        head.headers.add(name: "Host", value: endpoint.hostHeader)
        for (name, value) in headers { head.headers.add(name: name, value: value) }
        head.headers.add(name: "Content-Length", value: String(body.readableBytes))
        for attempt in 0..<2 {
            // The second try always connects anew: the pool may hold more connections the server dropped.
            let pooled = attempt == 0 ? takeIdle(endpoint) : nil
            let channel: any Channel
            if let pooled {
                channel = pooled
            } else {
                do {
                    channel = try await connect(endpoint, deadline: deadline).get()
                } catch {
                    return .failed(Self.describe(error))
                }
            }
            let answer = channel.eventLoop.makePromise(of: PostbackExchangeHandler.Answer.self)
            channel.writeAndFlush(PostbackExchangeHandler.Exchange(head: head, body: body, answer: answer, deadline: deadline))
                .cascadeFailure(to: answer)
            do {
                let result = try await answer.futureResult.get()
                if result.reusable { putIdle(channel, endpoint) } else { channel.close(promise: nil) }
                return .answered(status: result.status)
            } catch  where pooled != nil && Self.closedBeforeAnswer(error) {
                continue  // a stale pooled connection: once more, on a new one
            } catch {
                channel.close(promise: nil)
                return .failed(Self.describe(error))
            }
        }
        return .failed("the connection closed before an answer")
    }

    /// The request target for a destination's path and query (`DestinationPolicy.Destination
    /// .pathAndQuery`, which the destination check parsed already): "/" when empty, a leading "/" added
    /// before a bare query. Bytes a request line cannot carry (controls, space, DEL, non-ASCII) are
    /// percent-encoded, so no URL can add a header or a second request.
    public static func requestTarget(_ pathAndQuery: String) -> String {
        var target: [UInt8] = pathAndQuery.utf8.first == UInt8(ascii: "/") ? [] : [UInt8(ascii: "/")]
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in pathAndQuery.utf8 {
            if (0x21...0x7E).contains(byte) {
                target.append(byte)
            } else {
                target += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: target, as: UTF8.self)
    }

    /// Closes every idle connection (at exit).
    public func shutdown() async {
        let channels = idle.withLock { idle in
            defer { idle = [:] }
            return idle.values.flatMap { $0 }
        }
        for channel in channels { try? await channel.close() }
    }

    private func connect(_ endpoint: Endpoint, deadline: NIODeadline) -> EventLoopFuture<any Channel> {
        let tls = endpoint.secure ? self.tls : nil
        // SNI carries names only; for an IP literal the certificate is checked against the peer's address.
        let serverName = IPAddress(endpoint.host) == nil ? endpoint.host : nil
        let idleTimeout = self.idleTimeout
        let bootstrap = ClientBootstrap(group: group)
            .connectTimeout(max(.milliseconds(1), deadline - .now()))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if let tls { try pipeline.addHandler(TLSClientHandler(context: tls, serverHostname: serverName)) }
                    try pipeline.addHTTPClientHandlers()
                    try pipeline.addHandlers([
                        IdleStateHandler(allTimeout: idleTimeout), PostbackExchangeHandler(),
                    ])
                }
            }
        let connected: EventLoopFuture<any Channel>
        if let address = endpoint.address {
            do {
                connected = bootstrap.connect(to: try SocketAddress(ipAddress: address.description, port: endpoint.port))
            } catch {
                return group.next().makeFailedFuture(error)
            }
        } else {
            connected = bootstrap.connect(host: endpoint.host, port: endpoint.port)
        }
        // A pooled connection the server (or the idle timeout) closes leaves the pool at once.
        let forget: @Sendable (any Channel) -> Void = { [weak self] channel in self?.forget(channel, endpoint) }
        return connected.map { channel in
            channel.closeFuture.whenComplete { _ in forget(channel) }
            return channel
        }
    }

    private func takeIdle(_ endpoint: Endpoint) -> (any Channel)? {
        idle.withLock { idle in
            while let channel = idle[endpoint]?.popLast() {
                if idle[endpoint]?.isEmpty == true { idle[endpoint] = nil }
                if channel.isActive { return channel }
            }
            return nil
        }
    }

    private func putIdle(_ channel: any Channel, _ endpoint: Endpoint) {
        let kept = idle.withLock { idle in
            let count = idle[endpoint]?.count
            guard count.map({ $0 < idlePerEndpoint }) ?? (idle.count < endpointCapacity) else { return false }
            idle[endpoint, default: []].append(channel)
            return true
        }
        if !kept { channel.close(promise: nil) }
    }

    private func forget(_ channel: any Channel, _ endpoint: Endpoint) {
        idle.withLock { idle in
            guard var channels = idle[endpoint] else { return }
            channels.removeAll { $0 === channel }
            idle[endpoint] = channels.isEmpty ? nil : channels
        }
    }

    /// The connection was found closed before any answer began (so nothing was read of one).
    static func closedBeforeAnswer(_ error: any Error) -> Bool {
        switch error {
        case let error as PostbackExchangeHandler.ExchangeError: error == .closedBeforeAnswer
        case let error as ChannelError: error == .ioOnClosedChannel || error == .alreadyClosed || error == .eof
        default: false
        }
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? PostbackExchangeHandler.ExchangeError { return error.description }
        if case .connectTimeout = error as? ChannelError { return "connect timed out" }
        return "\(error)"
    }
}

extension PostbackPoster.Endpoint {
    /// `destination`'s endpoint (nil for a scheme other than http and https): the only way one is made,
    /// from the URL the destination check parsed. (An extension, so the memberwise initializer stays.)
    public init?(_ destination: DestinationPolicy.Destination, address: IPAddress? = nil) {
        guard destination.scheme == "http" || destination.scheme == "https" else { return nil }
        let secure = destination.scheme == "https"
        self.init(secure: secure, host: destination.host, port: destination.port ?? (secure ? 443 : 80), address: address)
    }
}
