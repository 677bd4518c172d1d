import NIOCore
import NIOHTTP1
import NIOPosix

/// Sends a load run's requests open loop over keep-alive HTTP/1.1 connections, all on one event loop:
/// no task, future chain or connection-pool state machine per request, so the tool costs a small part
/// of what it measures, and past ingest's capacity it is ingest that falls behind, not the tool (on a
/// 2-core machine the two share the cores). Each request goes out when due, on an idle connection, or a
/// new one up to `maxConnections`; beyond that it waits for one, and the wait counts in its latency.
///
/// Every property is used on `loop` only.
final class LoadSender: @unchecked Sendable {
    private let loop: any EventLoop
    private let host: String
    private let port: Int
    private let requests: [LoadRequest]
    private let headers: HTTPHeaders
    private let appKeyHeaders: HTTPHeaders
    private let rate: Int
    private let maxConnections: Int
    private let timeout: TimeAmount
    private let start: ContinuousClock.Instant
    private let finished: EventLoopPromise<[LoadOutcome]>

    private var next = 0
    private var waiting: [Sent] = []
    private var waitingHead = 0
    /// Every open connection, and those of them with nothing in flight.
    private var open: [ObjectIdentifier: Connection] = [:]
    private var idle: [Connection] = []
    private var opening = 0
    private var outcomes: [LoadOutcome] = []
    private var ticker: RepeatedTask?

    /// A request handed out: which, when it was due, and how late the tool was to hand it out.
    struct Sent {
        let index: Int
        let due: ContinuousClock.Instant
        let late: Double
    }

    init(
        loop: any EventLoop, host: String, port: Int, requests: [LoadRequest], appKey: String?, rate: Int,
        maxConnections: Int, timeout: TimeAmount
    ) {
        self.loop = loop
        self.host = host
        self.port = port
        self.requests = requests
        self.headers = HTTPHeaders([("Host", "\(host):\(port)"), ("Content-Type", "application/json")])
        var withKey = self.headers
        if let appKey { withKey.add(name: "Authorization", value: "Bearer \(appKey)") }
        self.appKeyHeaders = withKey
        self.rate = rate
        self.maxConnections = maxConnections
        self.timeout = timeout
        self.start = .now
        self.finished = loop.makePromise()
        outcomes.reserveCapacity(requests.count)
    }

    /// Runs the whole offer; one outcome per request, in the order they were answered.
    func run() async throws -> [LoadOutcome] {
        if requests.isEmpty { return [] }
        loop.execute {
            // Every millisecond: out goes everything due by then.
            self.ticker = self.loop.scheduleRepeatedTask(initialDelay: .zero, delay: .milliseconds(1)) { _ in
                self.tick()
            }
        }
        return try await finished.futureResult.get()
    }

    private func due(_ index: Int) -> ContinuousClock.Instant {
        // Due when its first event is: `rate` events per second, whatever the batch size.
        start + .seconds(Double(requests[index].firstEvent) / Double(rate))
    }

    private func tick() {
        let now = ContinuousClock.now
        while next < requests.count {
            let due = due(next)
            guard due <= now else { break }
            hand(Sent(index: next, due: due, late: (now - due).seconds * 1000))
            next += 1
        }
        // Answers that take longer than the timeout: the connection is closed, the request failed.
        for connection in open.values where connection.current != nil && connection.sentAt + timeout < .now() {
            connection.timedOut = true
            connection.channel?.close(promise: nil)
        }
    }

    private func hand(_ sent: Sent) {
        if let connection = idle.popLast() {
            send(sent, on: connection)
            return
        }
        waiting.append(sent)
        if open.count + opening < maxConnections { connect() }
    }

    private func send(_ sent: Sent, on connection: Connection) {
        let request = requests[sent.index]
        connection.current = sent
        connection.sentAt = .now()
        var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: request.path)
        head.headers = request.kind.needsAppKey ? appKeyHeaders : headers
        head.headers.add(name: "Content-Length", value: String(request.body.readableBytes))
        guard let channel = connection.channel else { return }
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        channel.write(HTTPClientRequestPart.body(.byteBuffer(request.body)), promise: nil)
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
    }

    private func connect() {
        opening += 1
        let connection = Connection(sender: self)
        ClientBootstrap(group: loop)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(ResponseHandler(connection: connection))
                }
            }
            .connect(host: host, port: port)
            .whenComplete { result in
                self.opening -= 1
                switch result {
                case .success(let channel):
                    self.open[ObjectIdentifier(connection)] = connection
                    connection.channel = channel
                    self.free(connection)
                case .failure:
                    // No connection to be had: the oldest waiting request is answered "no answer", so a
                    // run against a server that is gone still ends.
                    if let sent = self.takeWaiting() { self.record(failed: sent, timedOut: false) }
                    if self.waitingHead < self.waiting.count, self.open.count + self.opening < self.maxConnections {
                        self.connect()
                    }
                }
            }
    }

    private func takeWaiting() -> Sent? {
        guard waitingHead < waiting.count else { return nil }
        defer {
            waitingHead += 1
            if waitingHead > 4_096, waitingHead * 2 > waiting.count {
                waiting.removeFirst(waitingHead)
                waitingHead = 0
            }
        }
        return waiting[waitingHead]
    }

    /// A connection with nothing in flight: the next waiting request, or the idle list.
    fileprivate func free(_ connection: Connection) {
        if let sent = takeWaiting() {
            send(sent, on: connection)
        } else {
            idle.append(connection)
        }
    }

    fileprivate func answered(_ connection: Connection, status: Int, body: ByteBuffer?) {
        guard let sent = connection.current else { return }
        connection.current = nil
        let request = requests[sent.index]
        var outcome = LoadOutcome(
            kind: request.kind, milliseconds: (ContinuousClock.now - sent.due).seconds * 1000, events: request.events,
            batch: request.batch, status: status, body: body)
        outcome.lateMilliseconds = sent.late
        // A server that said it closes the connection gets no further request on it.
        if connection.closing { connection.channel?.close(promise: nil) } else { free(connection) }
        finish(outcome)
    }

    fileprivate func closed(_ connection: Connection) {
        open[ObjectIdentifier(connection)] = nil
        idle.removeAll { $0 === connection }
        connection.channel = nil
        if let sent = connection.current {
            connection.current = nil
            record(failed: sent, timedOut: connection.timedOut)
        }
        if waitingHead < waiting.count, open.count + opening < maxConnections { connect() }
    }

    private func record(failed sent: Sent, timedOut: Bool) {
        let request = requests[sent.index]
        var outcome = LoadOutcome(
            kind: request.kind, milliseconds: (ContinuousClock.now - sent.due).seconds * 1000, events: request.events)
        outcome.failed = request.events
        outcome.lateMilliseconds = sent.late
        outcome.timedOut = timedOut
        outcome.refusals[timedOut ? "timeout" : "no answer", default: 0] += request.events
        finish(outcome)
    }

    private func finish(_ outcome: LoadOutcome) {
        outcomes.append(outcome)
        guard outcomes.count == requests.count else { return }
        ticker?.cancel()
        let channels = idle.compactMap(\.channel)
        idle.removeAll()
        for channel in channels { channel.close(promise: nil) }
        finished.succeed(outcomes)
    }
}

/// One keep-alive connection and the request it carries; used on the sender's loop only.
private final class Connection: @unchecked Sendable {
    let sender: LoadSender
    var channel: (any Channel)?
    var current: LoadSender.Sent?
    var sentAt = NIODeadline.now()
    var timedOut = false
    /// The last answer said `Connection: close`.
    var closing = false

    init(sender: LoadSender) { self.sender = sender }
}

/// Reads a connection's answers: status and body, then hands them to the sender.
private final class ResponseHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart

    let connection: Connection
    private var status = 0
    private var body: ByteBuffer?

    init(connection: Connection) { self.connection = connection }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            status = Int(head.status.code)
            connection.closing = !head.isKeepAlive
            body = nil
        case .body(var part):
            if body == nil { body = part } else { body!.writeBuffer(&part) }
        case .end:
            connection.sender.answered(connection, status: status, body: body)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        connection.sender.closed(connection)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
