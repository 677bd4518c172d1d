import Hummingbird
import ServiceRuntime

/// Admin routes require `Authorization: Bearer <ADMIN_TOKEN>`, compared in constant time so the
/// response time says nothing about how much of a guess was right.
struct BearerTokenMiddleware<Context: RequestContext>: RouterMiddleware {
    let token: [UInt8]

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer "),
            Self.constantTimeEquals(Array(header.utf8.dropFirst(7)), token)
        else {
            throw ProblemDetails(.unauthorized, reason: .unauthorized, detail: "admin routes need a valid bearer token")
        }
        return try await next(request, context)
    }

    static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt8(a.count == b.count ? 0 : 1)
        for index in 0..<max(a.count, b.count) {
            difference |= (index < a.count ? a[index] : 0) ^ (index < b.count ? b[index] : 0xFF)
        }
        return difference == 0
    }
}
