import Hummingbird
import Prometheus
import RedisStreams

/// `/health` (liveness), `/ready` (Redis answers) and `/metrics` (Prometheus text) on every service.
public enum OperationsRoutes {
    /// What `add` registers, in the form `ingest --routes` prints.
    public static let routes = ["GET /health", "GET /ready", "GET /metrics"]

    public static func add(
        to router: Router<some RequestContext>, redis: RedisConnection, registry: PrometheusCollectorRegistry
    ) {
        router.get("/health") { _, _ in Response.json(["status": "ok"]) }
        router.get("/ready") { _, _ -> Response in
            do {
                _ = try await redis.send(RedisCommand("PING"))
                return Response.json(["status": "ready"])
            } catch {
                throw ProblemDetails(.serviceUnavailable, reason: "redis-unreachable", detail: "\(error)")
            }
        }
        router.get("/metrics") { _, _ -> Response in
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
        }
    }
}
