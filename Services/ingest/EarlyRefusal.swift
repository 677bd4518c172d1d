import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes
import RedisStreams
import ServiceRuntime

/// Decides from a request's head alone whether it is refused at once: the problem to answer, or nil
/// to hand the request to the router as usual.
public typealias EarlyRefusal = @Sendable (HTTPRequest) -> ProblemDetails?

/// An HTTP/1.1 listener whose connections answer refused requests on their event loop, before
/// Hummingbird reads them into a task and runs the router: a flood past capacity then costs a parse and
/// a write per request instead of a task, a router walk and several thread hops, and the accepted
/// requests keep the CPU. Everything not refused takes Hummingbird's usual path.
struct EarlyRefusalHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value

    let inner: HTTP1Channel
    let refusal: EarlyRefusal
    let serverName: String?

    static func builder(configuration: HTTP1Channel.Configuration, serverName: String?, refusal: @escaping EarlyRefusal)
        -> HTTPServerBuilder
    {
        HTTPServerBuilder { responder in
            EarlyRefusalHTTP1Channel(
                inner: HTTP1Channel(responder: responder, configuration: configuration), refusal: refusal,
                serverName: serverName)
        }
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
            // After the connection-state handler, so a refused request still counts as activity for the
            // idle timeout and as a request for a graceful shutdown's close-after-response.
            let operations = channel.pipeline.syncOperations
            let state = try operations.handler(type: HTTPConnectionStateHandler.self)
            try operations.addHandler(
                EarlyRefusalHandler(refusal: refusal, serverName: serverName), position: .after(state))
            return value
        }
    }

    /// The connection's requests are served on its own event loop, not on Swift's thread pool: a
    /// request's head is read, routed, handled and answered on the thread that parsed it, so a
    /// single-event request costs two thread hand-offs (to the Redis connection's thread and back), not
    /// four. The handlers only compute and await; nothing in them blocks a thread, and a handler with
    /// milliseconds of work (ingest's batch routes) moves to Swift's pool itself.
    func handle(value: Value, logger: Logger) async {
        await withTaskExecutorPreference(EventLoopTaskExecutor(value.channel.eventLoop)) {
            await inner.handle(value: value, logger: logger)
        }
    }
}

/// The channel handler: on a request head that `refusal` refuses, writes the problem response and
/// drops that request's body and end; any other request passes on untouched. HTTP/1.1 lets a server
/// answer before the body is read. Answers must go out in the order the requests came (a client may
/// pipeline), so while a request handed on is still unanswered the next ones are handed on too, and the
/// route refuses them the same way.
final class EarlyRefusalHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    let refusal: EarlyRefusal
    let serverName: String?
    /// Inside a refused request: its body parts and end go nowhere.
    private var discarding = false
    /// Requests handed on to Hummingbird whose answer has not ended yet.
    private var unanswered = 0

    init(refusal: @escaping EarlyRefusal, serverName: String?) {
        self.refusal = refusal
        self.serverName = serverName
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            // A client closing after this request is left to Hummingbird, which closes for it.
            if unanswered == 0, request.headerFields[.connection] != "close", let problem = refusal(request) {
                discarding = true
                answer(problem, context: context)
            } else {
                unanswered += 1
                context.fireChannelRead(data)
            }
        case .body:
            if !discarding { context.fireChannelRead(data) }
        case .end:
            if discarding { discarding = false } else { context.fireChannelRead(data) }
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { unanswered -= 1 }
        context.write(data, promise: promise)
    }

    /// The same response the router's `ProblemMiddleware` gives for `problem`.
    private func answer(_ problem: ProblemDetails, context: ChannelHandlerContext) {
        let body = ByteBuffer(bytes: problem.json)
        var fields = problem.headers
        fields[.contentLength] = String(body.readableBytes)
        fields[.date] = HTTPDate.now()
        if let serverName { fields[.server] = serverName }
        context.write(wrapOutboundOut(.head(HTTPResponse(status: problem.status, headerFields: fields))), promise: nil)
        context.write(wrapOutboundOut(.body(body)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}
