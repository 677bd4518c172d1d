import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import TLSClient

/// The tool's HTTP/1.1 client: one request per connection (`Connection: close`), its whole answer
/// collected up to a limit, TLS with the system's roots and the host name checked for `https`.
///
/// Why not AsyncHTTPClient: the tool's requests (the admin API, ingest for a simulation, a JWKS, a
/// forwarded postback) need none of its pool, redirects, HTTP/2 or streaming, and it and what only it
/// uses (swift-nio-http2, swift-algorithms and more) were about a tenth of a newcomer's first build.
public final class ToolHTTPClient: Sendable {
    public struct Response: Sendable {
        public var status: Int
        public var body: ByteBuffer
    }

    public enum Failure: Error, CustomStringConvertible {
        case invalidURL(String)
        case timedOut(Duration)
        case answerTooLarge(Int)
        case closedBeforeTheAnswer

        public var description: String {
            switch self {
            case .invalidURL(let url): "not an http or https URL: \(url)"
            case .timedOut(let timeout): "no whole answer within \(timeout)"
            case .answerTooLarge(let limit): "the answer is larger than \(limit) bytes"
            case .closedBeforeTheAnswer: "the connection closed before the whole answer arrived"
            }
        }
    }

    let connectTimeout: Duration
    let tls: TLSClientContext

    /// `connectTimeout`: how long a connection may take before the request fails (a host that is down
    /// should fail fast).
    public init(connectTimeout: Duration = .seconds(10)) throws {
        self.connectTimeout = connectTimeout
        tls = try TLSClientContext()
    }

    /// Sends one request and returns its status and body; a status is an answer, not an error.
    public func send(
        _ method: HTTPMethod, _ url: String, headers: [(String, String)] = [], body: ByteBuffer? = nil,
        timeout: Duration = .seconds(30), maximumAnswerBytes: Int = 16 << 20
    ) async throws -> Response {
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = parsed.host, !host.isEmpty
        else { throw Failure.invalidURL(url) }
        let secure = scheme == "https"
        let port = parsed.port ?? (secure ? 443 : 80)
        let bareHost = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        var target = parsed.path.isEmpty ? "/" : parsed.path
        if let query = parsed.query { target += "?" + query }

        var head = HTTPRequestHead(version: .http1_1, method: method, uri: target)
        let isDefaultPort = port == (secure ? 443 : 80)
        let hostHeader = bareHost.contains(":") ? "[\(bareHost)]" : bareHost
        head.headers.add(name: "Host", value: isDefaultPort ? hostHeader : "\(hostHeader):\(port)")
        head.headers.add(name: "Connection", value: "close")
        for (name, value) in headers { head.headers.add(name: name, value: value) }
        if let body { head.headers.add(name: "Content-Length", value: "\(body.readableBytes)") }

        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let answer = loop.makePromise(of: Response.self)
        let tls = tls
        // An IP literal is checked against the certificate's addresses, and is never sent as SNI.
        let serverName = secure && !Self.isIPLiteral(bareHost) ? bareHost : nil
        let bootstrap = ClientBootstrap(group: loop)
            .connectTimeout(TimeAmount(connectTimeout))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if secure {
                        try channel.pipeline.syncOperations.addHandler(
                            TLSClientHandler(context: tls, serverHostname: serverName))
                    }
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(
                        AnswerCollector(answer: answer, limit: maximumAnswerBytes))
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(host: bareHost, port: port).get()
        } catch {
            // NIO insists that every promise is completed, also one no connection came to answer.
            answer.fail(error)
            throw error
        }
        let deadline = loop.scheduleTask(in: TimeAmount(timeout)) {
            answer.fail(Failure.timedOut(timeout))
            channel.close(promise: nil)
        }
        defer { deadline.cancel() }
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        if let body { channel.write(HTTPClientRequestPart.body(.byteBuffer(body)), promise: nil) }
        channel.writeAndFlush(HTTPClientRequestPart.end(nil)).cascadeFailure(to: answer)
        return try await answer.futureResult.get()
    }

    static func isIPLiteral(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}

/// Collects one answer: its status, then its body up to `limit` bytes; closes the connection when done.
private final class AnswerCollector: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart

    let answer: EventLoopPromise<ToolHTTPClient.Response>
    let limit: Int
    var status = 0
    var body = ByteBuffer()

    init(answer: EventLoopPromise<ToolHTTPClient.Response>, limit: Int) {
        self.answer = answer
        self.limit = limit
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            status = Int(head.status.code)
        case .body(var part):
            guard body.readableBytes + part.readableBytes <= limit else {
                answer.fail(ToolHTTPClient.Failure.answerTooLarge(limit))
                context.close(promise: nil)
                return
            }
            body.writeBuffer(&part)
        case .end:
            answer.succeed(.init(status: status, body: body))
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        answer.fail(error)
        context.close(promise: nil)
    }

    // A completed answer is kept: a promise takes its first result only.
    func channelInactive(context: ChannelHandlerContext) {
        answer.fail(ToolHTTPClient.Failure.closedBeforeTheAnswer)
        context.fireChannelInactive()
    }
}
