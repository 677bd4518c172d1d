import AttributionModel
import Foundation
import Hummingbird
import RedisStreams

/// RFC 9457 problem JSON with a stable machine-readable `reason` (a `ProblemReason`, encoded as its
/// string): every 4xx/5xx the API returns.
public struct ProblemDetails: HTTPResponseError, Codable, Sendable {
    public var type: String
    public var title: String
    public var status: HTTPResponse.Status { .init(code: statusCode) }
    public var statusCode: Int
    public var detail: String
    public var reason: ProblemReason
    /// The `Retry-After` header, in seconds: 429 and 503 always carry one (1 unless set).
    public var retryAfterSeconds: Int?
    /// An extension member (RFC 9457 §3.2): the event a `replication-timeout` did write, so a client
    /// can match it with the id its keyed retry gets.
    public var eventIdentifier: String?
    /// A 405's `Allow` header: the methods the path is served with.
    public var allow: String?

    public init(_ status: HTTPResponse.Status, reason: ProblemReason, detail: String, retryAfterSeconds: Int? = nil) {
        self.type = "https://attribution-pipeline.dev/problems/\(reason.rawValue)"
        self.title = status.reasonPhrase
        self.statusCode = status.code
        self.detail = detail
        self.reason = reason
        self.retryAfterSeconds = retryAfterSeconds
    }

    enum CodingKeys: String, CodingKey {
        case type, title, detail, reason
        case statusCode = "status"
        case eventIdentifier = "event-identifier"
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: json)))
    }

    /// The answer's headers: its media type, `WWW-Authenticate` on a 401, `Retry-After` on a 429/503.
    public var headers: HTTPFields {
        var headers = HTTPFields()
        headers[.contentType] = "application/problem+json"
        if statusCode == 401 { headers[.wwwAuthenticate] = "Bearer" }
        if let retryAfter { headers[.retryAfter] = retryAfter }
        if let allow { headers[.allow] = allow }
        return headers
    }

    /// The response body.
    public var json: Data { (try? JSONEncoder().encode(self)) ?? Data() }

    /// The `Retry-After` value this answer carries, if any.
    public var retryAfter: String? {
        statusCode == 503 || statusCode == 429 ? String(retryAfterSeconds ?? 1) : nil
    }

    public static func badRequest(_ reason: ProblemReason, _ detail: String) -> ProblemDetails {
        ProblemDetails(.badRequest, reason: reason, detail: detail)
    }

    /// A request the model's validation refused: always 400.
    public init(_ problem: RequestProblem) {
        self.init(.badRequest, reason: problem.reason, detail: problem.detail)
    }
}

/// Renders any error that is not already problem JSON as one, so no response ever leaks a bare error.
public struct ProblemMiddleware<Context: RequestContext>: RouterMiddleware {
    /// The router's routes: a 404 for a path served with other methods becomes a 405.
    let known: KnownRoutes?

    public init(known: KnownRoutes? = nil) {
        self.known = known
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        do {
            return try await next(request, context)
        } catch let problem as ProblemDetails {
            throw problem
        } catch let problem as RequestProblem {
            // Route handlers validate through the model (`validate()`); its refusals are answered here.
            throw ProblemDetails(problem)
        } catch let error as HTTPError {
            if error.status == .notFound, let allowed = known?.methods(for: request.uri.path), !allowed.isEmpty,
                !allowed.contains(request.method.rawValue)
            {
                var problem = ProblemDetails(
                    .methodNotAllowed, reason: .methodNotAllowed,
                    detail: "this path answers \(allowed.joined(separator: ", ")) only, not \(request.method.rawValue)")
                problem.allow = allowed.joined(separator: ", ")
                throw problem
            }
            let reason: ProblemReason =
                switch error.status {
                case .notFound: .notFound
                case .methodNotAllowed: .methodNotAllowed
                case .contentTooLarge: .bodyTooLarge
                default: .httpError
                }
            throw ProblemDetails(error.status, reason: reason, detail: error.body ?? error.status.reasonPhrase)
        } catch is DecodingError {
            throw ProblemDetails.badRequest(.invalidJSON, "the body is not the JSON this route expects")
        } catch let error as RedisError where error.code != .server {
            // Redis down, restarting or failing over: worth retrying (with the same Idempotency-Key,
            // since a request cut off mid-round-trip may or may not have been written).
            context.logger.warning("redis unavailable", metadata: ["error": "\(error)"])
            throw ProblemDetails(
                .serviceUnavailable, reason: .redisUnreachable,
                detail:
                    "Redis is unavailable; retry after Retry-After (an event with the same Idempotency-Key: it may be written)")
        } catch {
            context.logger.error("request failed", metadata: ["error": "\(error)"])
            throw ProblemDetails(.internalServerError, reason: .internalError, detail: "the request could not be completed")
        }
    }
}

extension Response {
    /// A JSON response with the pipeline's sorted-keys encoding.
    public static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
