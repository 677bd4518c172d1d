import NIOCore
import NIOHTTP1

/// One request and its answer at a time on a `PostbackPoster` connection: writes the request's head,
/// body and end together (one flush, so one segment for a small postback), reads the answer's status,
/// drains its body up to a limit, and says whether the connection can carry the next request. Fails
/// the exchange at its deadline, closing the connection.
final class PostbackExchangeHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = Exchange
    typealias OutboundOut = HTTPClientRequestPart

    struct Exchange: Sendable {
        var head: HTTPRequestHead
        var body: ByteBuffer
        var answer: EventLoopPromise<Answer>
        var deadline: NIODeadline
    }

    struct Answer: Sendable {
        var status: Int
        /// The answer was complete and keeps the connection open (HTTP/1.1 keep-alive).
        var reusable: Bool
    }

    enum ExchangeError: Error, Equatable, CustomStringConvertible {
        case timedOut
        /// The connection closed before an answer's head arrived.
        case closedBeforeAnswer
        /// The connection closed in the middle of an answer.
        case closedDuringAnswer
        case busy

        var description: String {
            switch self {
            case .timedOut: "timed out"
            case .closedBeforeAnswer: "the connection closed before an answer"
            case .closedDuringAnswer: "the connection closed during the answer"
            case .busy: "connection busy"
            }
        }
    }

    private var answer: EventLoopPromise<Answer>?
    private var timeout: Scheduled<Void>?
    private var status: Int?
    private var keepAlive = false
    private var bodyBytes = 0

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let exchange = unwrapOutboundIn(data)
        guard answer == nil else {
            exchange.answer.fail(ExchangeError.busy)
            promise?.fail(ExchangeError.busy)
            return
        }
        answer = exchange.answer
        status = nil
        bodyBytes = 0
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timeout = context.eventLoop.scheduleTask(deadline: exchange.deadline) {
            let (handler, context) = loopBound.value
            handler.finish(.failure(ExchangeError.timedOut))
            context.close(promise: nil)
        }
        context.write(wrapOutboundOut(.head(exchange.head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(exchange.body))), promise: nil)
        context.write(wrapOutboundOut(.end(nil)), promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard answer != nil else {
            context.close(promise: nil)  // nothing was asked: a server talking out of turn is not reused
            return
        }
        switch unwrapInboundIn(data) {
        case .head(let head):
            // 1xx are interim (100 Continue, 103 Early Hints): the answer is still to come.
            if (100..<200).contains(head.status.code) { return }
            status = Int(head.status.code)
            keepAlive = head.isKeepAlive
        case .body(let part):
            bodyBytes += part.readableBytes
            if bodyBytes > PostbackPoster.responseBodyLimit, let status {
                finish(.success(Answer(status: status, reusable: false)))
                context.close(promise: nil)
            }
        case .end:
            guard let status else { return }
            finish(.success(Answer(status: status, reusable: keepAlive)))
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(.failure(status == nil ? ExchangeError.closedBeforeAnswer : ExchangeError.closedDuringAnswer))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        finish(.failure(error))
        context.close(promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // The idle timeout: only a connection with nothing in flight is closed by it.
        if event is IdleStateHandler.IdleStateEvent, answer == nil {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    private func finish(_ result: Result<Answer, any Error>) {
        guard let answer else { return }
        self.answer = nil
        timeout?.cancel()
        timeout = nil
        answer.completeWith(result)
    }
}
