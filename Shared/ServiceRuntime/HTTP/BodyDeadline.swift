import Hummingbird

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

    /// The body, at most `limit` bytes, by the current deadline: `HTTPError(.contentTooLarge)` beyond
    /// the limit, `Expired` past the deadline, and the body's own error (a malformed chunk) otherwise.
    public static func collect(_ body: RequestBody, upTo limit: Int) async throws -> ByteBuffer {
        guard let deadline = current else { return try await body.collect(upTo: limit) }
        return try await withThrowingTaskGroup(of: ByteBuffer?.self) { group in
            group.addTask { try await body.collect(upTo: limit) }
            group.addTask {
                try await Task.sleep(until: deadline)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let bytes = first else { throw Expired() }
            return bytes
        }
    }
}
