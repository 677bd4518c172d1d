import Hummingbird
import NIOCore

/// How long a request body may take to arrive. The server's idle timeout closes silent connections,
/// but a client trickling one byte at a time is never idle: this deadline, set per request by the
/// middleware, bounds it too (`collectBody(upTo:)` answers 408 past it).
public enum BodyDeadline {
    @TaskLocal public static var current: ContinuousClock.Instant?

    public struct Middleware<Context: RequestContext>: RouterMiddleware {
        let timeout: Duration

        public init(timeout: Duration) { self.timeout = timeout }

        public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
            async throws -> Response
        {
            try await BodyDeadline.$current.withValue(ContinuousClock.now + timeout) { try await next(request, context) }
        }
    }

    public struct Expired: Error {}

    /// The body, at most `limit` bytes, by the current deadline: `NIOTooManyBytesError` (413) beyond the
    /// limit, `Expired` when a part of it arrives past the deadline, and the body's own error (a
    /// malformed chunk, a closed connection) otherwise.
    ///
    /// The deadline is checked as each part arrives, not raced against a timer: a timer is a task and a
    /// sleep per request, two thread hand-offs more on the hot path. A body that stops arriving
    /// altogether is the server's idle timeout's (`HTTP_IDLE_TIMEOUT_MS`, the same value): it closes the
    /// connection once nothing was read for that long. So a trickled body is answered 408 with its first
    /// part past the deadline, and a stalled one is cut off one idle timeout after its last byte.
    public static func collect(_ body: RequestBody, upTo limit: Int) async throws -> ByteBuffer {
        guard let deadline = current else { return try await body.collect(upTo: limit) }
        var collected: ByteBuffer?
        for try await part in body {
            if ContinuousClock.now > deadline { throw Expired() }
            guard (collected?.readableBytes ?? 0) + part.readableBytes <= limit else {
                throw NIOTooManyBytesError(maxBytes: limit)
            }
            if collected == nil {
                collected = part
            } else {
                var part = part
                collected!.writeBuffer(&part)
            }
        }
        return collected ?? ByteBuffer()
    }
}
