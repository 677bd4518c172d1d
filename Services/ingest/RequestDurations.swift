import Hummingbird
import Metrics

/// How long ingest takes to answer, per route: `ingest_request_duration_seconds` (a Prometheus histogram,
/// buckets from 0.5 ms), by route pattern, method and status class. Measured from when the router
/// matched the request until its response is ready (its body may still be in flight); requests refused
/// from their head alone (`EarlyRefusal`) never reach it.
struct RequestDurations<Context: RequestContext>: RouterMiddleware {
    static var label: String { "ingest_request_duration_seconds" }

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let started = ContinuousClock.now
        let route = context.endpointPath ?? "unmatched"
        do {
            let response = try await next(request, context)
            record(route, request.method, response.status.code, since: started)
            return response
        } catch {
            record(route, request.method, (error as? any HTTPResponseError)?.status.code ?? 500, since: started)
            throw error
        }
    }

    private func record(_ route: String, _ method: HTTPRequest.Method, _ status: Int, since started: ContinuousClock.Instant) {
        let elapsed = ContinuousClock.now - started
        let nanoseconds = elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000
        Timer(label: Self.label, dimensions: [("route", route), ("method", method.rawValue), ("status", "\(status / 100)xx")])
            .recordNanoseconds(nanoseconds)
    }
}
