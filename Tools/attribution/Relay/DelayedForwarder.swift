import NIOCore
import Synchronization

/// The current one-way delay of a relay: half the round-trip time it adds, shared by its connections.
final class RelayDelay: Sendable {
    private let nanoseconds = Atomic<Int64>(0)

    /// `roundTripMilliseconds` added to every round trip: each direction holds a chunk half of it.
    func set(roundTripMilliseconds: Double) {
        nanoseconds.store(Int64(max(0, roundTripMilliseconds) * 500_000), ordering: .relaxed)
    }

    var oneWay: TimeAmount { .nanoseconds(nanoseconds.load(ordering: .relaxed)) }
}

/// One direction of a relayed connection: every chunk read here is written to `peer` once `delay` has
/// passed since it was read, in order. Chunks in flight are not waited for one by one, so the
/// connection's throughput stays what its two ends can do. Both channels run on one event loop.
final class DelayedForwarder: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let peer: any Channel
    private let delay: RelayDelay
    private var queue = CircularBuffer<(due: NIODeadline, chunk: ByteBuffer)>()
    private var flushScheduled = false
    private var closing = false

    init(peer: any Channel, delay: RelayDelay) {
        self.peer = peer
        self.delay = delay
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        queue.append((NIODeadline.now() + delay.oneWay, unwrapInboundIn(data)))
        scheduleFlush(context: context)
    }

    /// The peer is closed once what was read before the end has been written.
    func channelInactive(context: ChannelHandlerContext) {
        closing = true
        if queue.isEmpty { peer.close(promise: nil) }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func scheduleFlush(context: ChannelHandlerContext) {
        guard !flushScheduled, let head = queue.first else { return }
        flushScheduled = true
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(deadline: head.due) {
            let (forwarder, context) = bound.value
            forwarder.flushDue(context: context)
        }
    }

    private func flushDue(context: ChannelHandlerContext) {
        flushScheduled = false
        let now = NIODeadline.now()
        var wrote = false
        while let head = queue.first, head.due <= now {
            queue.removeFirst()
            peer.write(head.chunk, promise: nil)
            wrote = true
        }
        if wrote { peer.flush() }
        if queue.isEmpty, closing {
            peer.close(promise: nil)
        } else {
            scheduleFlush(context: context)
        }
    }
}
