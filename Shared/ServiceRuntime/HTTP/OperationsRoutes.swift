import Hummingbird
import Prometheus
import RedisStreams

/// `/health` (liveness), `/ready` (Redis answers and the service's consumer groups exist) and `/metrics` (Prometheus text) on every service.
/// Ingest's public listener gets `addPublic` instead: `/health`, and `/ready` without the error's text.
public enum OperationsRoutes {
    /// What `add` registers, in the form `ingest --routes` prints.
    public static let routes = ["GET /health", "HEAD /health", "GET /ready", "GET /metrics"]
    /// What `addPublic` registers.
    public static let publicRoutes = ["GET /health", "HEAD /health", "GET /ready"]

    /// Liveness, and readiness answered by status and reason alone: what Redis said (addresses, user
    /// names, error text) is for the operators' listener.
    public static func addPublic(to router: Router<some RequestContext>, redis: RedisConnection) {
        router.get("/health") { _, _ in Response.json(["status": "ok"]) }
        // Load balancers that check with HEAD.
        router.head("/health") { _, _ in Response(status: .ok) }
        router.get("/ready") { _, _ -> Response in
            do {
                _ = try await redis.send(RedisCommand("PING"))
            } catch {
                throw ProblemDetails(.serviceUnavailable, reason: .redisUnreachable, detail: "Redis does not answer")
            }
            return Response.json(["status": "ready"])
        }
    }

    /// `groups`: the consumer groups this service reads; `/ready` answers 503 until each exists.
    /// `beforeMetrics` runs before `/metrics` answers (refreshing gauges read on demand).
    public static func add(
        to router: Router<some RequestContext>, redis: RedisConnection, registry: PrometheusCollectorRegistry,
        groups: [(stream: String, group: String)] = [], beforeMetrics: @escaping @Sendable () async -> Void = {}
    ) {
        router.get("/health") { _, _ in Response.json(["status": "ok"]) }
        // Load balancers that check with HEAD.
        router.head("/health") { _, _ in Response(status: .ok) }
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
