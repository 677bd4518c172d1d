import NIOCore
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
    /// What follows a request's path up to its Content-Length value: " HTTP/1.1", Host, Content-Type
    /// (and the app key's Authorization for the routes that need it), "Content-Length: ".
    private let headPrefix: [UInt8]
    private let appKeyHeadPrefix: [UInt8]
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
    private var ticks = 0

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
        let common = " HTTP/1.1\r\nHost: \(host):\(port)\r\nContent-Type: application/json\r\n"
        self.headPrefix = Array((common + "Content-Length: ").utf8)
        let authorization = appKey.map { "Authorization: Bearer \($0)\r\n" } ?? ""
        self.appKeyHeadPrefix = Array((common + authorization + "Content-Length: ").utf8)
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
        // Answers that take longer than the timeout: the connection is closed, the request failed. Looked
        // for every 100 ticks: timeouts are seconds long, and the connections are hundreds.
        ticks += 1
        guard ticks % 100 == 0 else { return }
        let deadline = NIODeadline.now() - timeout
        for connection in open.values where connection.current != nil && connection.sentAt < deadline {
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
        guard let channel = connection.channel else { return }
        // The request's bytes written straight out: a head prefix made once per route, its length, its
        // body. No HTTP encoder or header list per request: at tens of thousands of requests a second
        // on the server's own cores, the tool's cost is taken from the server's.
        let prefix = request.kind.needsAppKey ? appKeyHeadPrefix : headPrefix
        let length = String(request.body.readableBytes)
        let path = request.path
        var buffer = channel.allocator.buffer(
            capacity: 16 + path.utf8.count + prefix.count + length.utf8.count + request.body.readableBytes)
        buffer.writeStaticString("POST ")
        buffer.writeString(path)
        buffer.writeBytes(prefix)
        buffer.writeString(length)
        buffer.writeStaticString("\r\n\r\n")
        var body = request.body
        buffer.writeBuffer(&body)
        channel.writeAndFlush(buffer, promise: nil)
    }

    private func connect() {
        opening += 1
        let connection = Connection(sender: self)
        ClientBootstrap(group: loop)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
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
            firstDevice: request.firstDevice, batch: request.batch, status: status, body: body)
        outcome.lateMilliseconds = sent.late
        outcome.answerMilliseconds = Double((NIODeadline.now() - connection.sentAt).nanoseconds) / 1e6
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

/// Reads a connection's answers off the wire (`HTTPAnswer`: status line, Content-Length, Connection:
/// close, body), then hands status and body to the sender. One answer at a time: the sender sends the
/// next request on a connection only after its answer.
private final class ResponseHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    let connection: Connection
    private var pending: ByteBuffer?

    init(connection: Connection) { self.connection = connection }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        if pending == nil { pending = bytes } else { pending!.writeBuffer(&bytes) }
        while var buffer = pending, buffer.readableBytes > 0 {
            switch HTTPAnswer.parse(&buffer) {
            case .incomplete:
                return
            case .malformed:
                context.close(promise: nil)  // not HTTP this tool can read: the request counts as failed
                return
            case .answer(let answer):
                pending = buffer.readableBytes > 0 ? buffer : nil
                connection.closing = answer.closing
                connection.sender.answered(connection, status: answer.status, body: answer.body)
            }
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
