import Logging

/// The timer loop of one or more `DelayedQueue`s (a queue's partitions): releases due items of all of
/// them in one pipeline, then sleeps; safe to run in several replicas.
public final class DelayedQueuePump: Sendable {
    private let queues: [DelayedQueue]
    private let connection: RedisConnection
    private let pollMilliseconds: Int
    private let limit: Int
    private let together: Bool
    private let clock: @Sendable () -> Int64
    private let logger: Logger

    /// A pump; `clock` returns "now" in milliseconds (injected so tests and time-scaled runs control it).
    public convenience init(
        queue: DelayedQueue, connection: RedisConnection, pollMilliseconds: Int = 100, limit: Int = 500,
        clock: @escaping @Sendable () -> Int64, logger: Logger
    ) {
        self.init(
            queues: [queue], connection: connection, pollMilliseconds: pollMilliseconds, limit: limit, clock: clock,
            logger: logger)
    }

    /// A pump over several queues (`queues` must not be empty); `together`: release them all with one
    /// script run per layout (one Redis only: see `DelayedQueue.releaseDue`).
    public init(
        queues: [DelayedQueue],
        together: Bool = false,
        connection: RedisConnection,
        pollMilliseconds: Int = 100,
        limit: Int = 500,
        clock: @escaping @Sendable () -> Int64,
        logger: Logger
    ) {
        precondition(!queues.isEmpty, "a pump needs a queue")
        self.queues = queues
        self.together = together
        self.connection = connection
        self.pollMilliseconds = max(1, pollMilliseconds)
        self.limit = max(1, limit)
        self.clock = clock
        var logger = logger
        logger[metadataKey: "queue"] = .string(
            queues.count == 1 ? queues[0].name : "\(queues[0].name) and \(queues.count - 1) more")
        self.logger = logger
    }

    /// Until cancelled: release while a full batch moved (a backlog), then sleep `pollMilliseconds`; rethrows only `closed`.
    public func run() async throws {
        self.logger.info(
            "delayed queue pump started", metadata: ["target": "\(self.queues[0].target)", "queues": "\(self.queues.count)"])
        while !Task.isCancelled {
            do {
                let moved = try await DelayedQueue.releaseDue(
                    self.queues, now: self.clock(), limit: self.limit, together: self.together, on: self.connection)
                let total = moved.reduce(0, +)
                if total > 0 {
                    self.logger.debug("released due items", metadata: ["count": "\(total)"])
                }
                // A backlog in any queue: release again at once.
                if moved.contains(self.limit) { continue }
            } catch let error as RedisError where error.code == .closed {
                self.logger.info("delayed queue pump stopped: connection closed")
                throw error
            } catch {
                // Items stay in the queue; the next poll tries again.
                self.logger.error("releasing due items failed", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: .milliseconds(self.pollMilliseconds))
        }
        self.logger.info("delayed queue pump stopped")
    }
}
