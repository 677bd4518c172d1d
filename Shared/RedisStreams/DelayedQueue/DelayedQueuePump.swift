import Logging

/// The timer loop of a `DelayedQueue`: releases due items, then sleeps; safe to run in several replicas.
public final class DelayedQueuePump: Sendable {
    private let queue: DelayedQueue
    private let connection: RedisConnection
    private let pollMilliseconds: Int
    private let limit: Int
    private let clock: @Sendable () -> Int64
    private let logger: Logger

    /// A pump; `clock` returns "now" in milliseconds (injected so tests and time-scaled runs control it).
    public init(
        queue: DelayedQueue,
        connection: RedisConnection,
        pollMilliseconds: Int = 100,
        limit: Int = 500,
        clock: @escaping @Sendable () -> Int64,
        logger: Logger
    ) {
        self.queue = queue
        self.connection = connection
        self.pollMilliseconds = max(1, pollMilliseconds)
        self.limit = max(1, limit)
        self.clock = clock
        var logger = logger
        logger[metadataKey: "queue"] = .string(queue.name)
        self.logger = logger
    }

    /// Until cancelled: release while a full batch moved (a backlog), then sleep `pollMilliseconds`; rethrows only `closed`.
    public func run() async throws {
        self.logger.info("delayed queue pump started", metadata: ["target": "\(self.queue.target)"])
        while !Task.isCancelled {
            do {
                let moved = try await self.queue.releaseDue(now: self.clock(), limit: self.limit, on: self.connection)
                if moved > 0 {
                    self.logger.debug("released due items", metadata: ["count": "\(moved)"])
                }
                if moved == self.limit { continue }
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
