import Hummingbird
import Prometheus
import RedisStreams

/// `/health` (liveness), `/ready` (Redis answers and the service's consumer groups exist) and `/metrics` (Prometheus text) on every service.
public enum OperationsRoutes {
    /// What `add` registers, in the form `ingest --routes` prints.
    public static let routes = ["GET /health", "GET /ready", "GET /metrics"]

    /// `groups`: the consumer groups this service reads; `/ready` answers 503 until each exists.
    /// `beforeMetrics` runs before `/metrics` answers (refreshing gauges read on demand).
    public static func add(
        to router: Router<some RequestContext>, redis: RedisConnection, registry: PrometheusCollectorRegistry,
        groups: [(stream: String, group: String)] = [], beforeMetrics: @escaping @Sendable () async -> Void = {}
    ) {
        router.get("/health") { _, _ in Response.json(["status": "ok"]) }
        router.get("/ready") { _, _ -> Response in
            let replies: [RedisReply]
            do {
                replies = try await redis.pipeline(
                    [RedisCommand("PING")] + groups.map { RedisCommand("XINFO", "GROUPS", $0.stream) })
            } catch {
                throw ProblemDetails(.serviceUnavailable, reason: .redisUnreachable, detail: "\(error)")
            }
            for (reply, expected) in zip(replies.dropFirst(), groups) {
                let names = reply.elements.compactMap { $0.fieldMap["name"]?.string }
                guard names.contains(expected.group) else {
                    throw ProblemDetails(
                        .serviceUnavailable, reason: .consumerGroupMissing,
                        detail: "group \(expected.group) on \(expected.stream) does not exist yet")
                }
            }
            return Response.json(["status": "ready"])
        }
        router.get("/metrics") { _, _ -> Response in
            await beforeMetrics()
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
        }
    }
}
