import Foundation
import HTTPTypes
import NIOCore
import NIOHTTPTypes
import ServiceRuntime

/// Postbacks answered by a channel handler on their connection's event loop, without Hummingbird's
/// per-request task, router walk and async streams: those cost the receiver about as much as verifying
/// and recording a postback, and the benchmark runs the receiver on the pipeline's cores, so its cost is taken from theirs.
/// `ReceiverIntake` decides every answer, so this path and the router's answer alike.
///
/// A `POST` to a postback path is read here and answered at once when `answerAtOnce` can (a known kid,
/// flaky mode plain); otherwise its answer is computed in a task (a key set fetch, a deliberate delay),
/// and the connection's later request parts wait, in order, until it is written. Everything else goes
/// to Hummingbird. Answers leave in the order the requests came (a client may pipeline): while a
/// request handed on is unanswered, postbacks are handed on too, and the router answers them.
final class PostbackFastPath: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    let intake: ReceiverIntake
    let serverName: String
    /// Requests handed on to Hummingbird whose answer has not ended yet.
    private var unanswered = 0
    /// The postback being read here: its path and its body so far.
    private var reading: (path: String, body: ByteBuffer, tooLarge: Bool)?
    /// While an answer is computed in a task, the request parts that arrive meanwhile, in order.
    private var waiting = false
    private var queued: [NIOAny] = []

    init(intake: ReceiverIntake, serverName: String) {
        self.intake = intake
        self.serverName = serverName
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if waiting {
            queued.append(data)
            return
        }
        switch unwrapInboundIn(data) {
        case .head(let request):
            let path = request.path.map { String($0.prefix { $0 != "?" }) }
            if unanswered == 0, request.method == .post, request.headerFields[.connection] != "close", let path,
                ReceiverRouter.postbackPaths.contains(path)
            {
                reading = (path, context.channel.allocator.buffer(capacity: 1_024), false)
            } else {
                unanswered += 1
                context.fireChannelRead(data)
            }
        case .body(var part):
            guard var current = reading else { return context.fireChannelRead(data) }
            if current.body.readableBytes + part.readableBytes > ReceiverRouter.maximumBodySize {
                current.tooLarge = true
            } else {
                current.body.writeBuffer(&part)
            }
            reading = current
        case .end:
            guard let current = reading else { return context.fireChannelRead(data) }
            reading = nil
            guard !current.tooLarge else {
                return write(
                    ReceiverIntake.problem(
                        .contentTooLarge, reason: "body-too-large",
                        detail: "a postback body is at most \(ReceiverRouter.maximumBodySize) bytes"),
                    context: context)
            }
            let body = Data(current.body.readableBytesView)
            if let answer = intake.answerAtOnce(body: body, path: current.path) {
                return write(answer, context: context)
            }
            waiting = true
            let loop = context.eventLoop
            let bound = NIOLoopBound((handler: self, context: context), eventLoop: loop)
            Task { [intake, path = current.path] in
                let answer = await intake.answer(body: body, path: path)
                loop.execute { bound.value.handler.finish(answer, context: bound.value.context) }
            }
        }
    }

    /// Writes a waited-for answer, then reads what arrived meanwhile (which may wait again).
    private func finish(_ answer: ReceiverIntake.Answer, context: ChannelHandlerContext) {
        waiting = false
        // The client went away meanwhile: nothing to answer, and nothing queued to hand on.
        guard context.channel.isActive else { return queued.removeAll() }
        write(answer, context: context)
        let parts = queued
        queued = []
        for part in parts { channelRead(context: context, data: part) }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { unanswered -= 1 }
        context.write(data, promise: promise)
    }

    /// The answer as the router would write it (`ReceiverRouter.response`), with Hummingbird's Date and
    /// Server headers.
    private func write(_ answer: ReceiverIntake.Answer, context: ChannelHandlerContext) {
        var fields = HTTPFields()
        if !answer.body.isEmpty { fields[.contentType] = answer.contentType }
        if let location = answer.location { fields[.location] = location }
        fields[.contentLength] = String(answer.body.count)
        fields[.date] = HTTPDate.now()
        fields[.server] = serverName
        context.write(wrapOutboundOut(.head(HTTPResponse(status: answer.status, headerFields: fields))), promise: nil)
        if !answer.body.isEmpty { context.write(wrapOutboundOut(.body(ByteBuffer(bytes: answer.body))), promise: nil) }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}
