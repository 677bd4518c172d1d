import AttributionModel
import Foundation
import HTTPAPI
import Hummingbird
import PipelineCatalog
import RedisStreams
import ServiceRuntime

/// An ad network's own routes on the public listener, under one of its credentials (which admin
/// issues): its registration (`GET /v1/ad-networks/{id}`), its recent refusals (`…/rejections`) and
/// test postbacks (`…/test-postbacks`), and nothing else: a network sees why its impressions were
/// refused, and tries its receiver, without holding `ADMIN_TOKEN`.
struct AdNetworkRoutes {
    let redis: RedisConnection
    let partitioning: Partitioning
    let clock: @Sendable () -> Milliseconds

    var credentials: IssuedSecrets { IssuedSecrets.networkCredentials(redis) }

    func add(to router: Router<BasicRequestContext>, catalog: RouteCatalog) {
        catalog.on(router, .get, "/v1/ad-networks/:id") { request, context in
            let id = try await authorized(request, context)
            guard let json = try await redis.send(RedisCommand("HGET", RegistryKeys.adNetworks, id)).bytes else {
                throw ProblemDetails(.notFound, reason: .unknownAdNetwork, detail: "ad network \(id) is not registered")
            }
            return JSONAnswer.bytes(json)
        }
        catalog.on(router, .get, "/v1/ad-networks/:id/rejections") { request, context in
            let id = try await authorized(request, context)
            return try await JSONAnswer.recentRejections(redis, RejectionLog.networkKey(id), unsignedOf: id)
        }
        let testPostbacks = TestPostbackRequests(redis: redis, partitioning: partitioning, clock: clock)
        catalog.on(router, .post, "/v1/ad-networks/:id/test-postbacks") { request, context in
            try await testPostbacks.send(for: try await authorized(request, context), request)
        }
    }

    /// The network the path names, once the bearer is one of its credentials: 401 without a live
    /// credential, 403 `credential-mismatch` with another network's.
    func authorized(_ request: Request, _ context: BasicRequestContext) async throws -> String {
        let id = try PathParameters.adNetwork(context).rawValue
        guard let token = request.bearerToken, let owner = try await credentials.owner(of: token) else {
            throw ProblemDetails(
                .unauthorized, reason: .unauthorized,
                detail: "ad-network routes need one of the network's credentials (POST /v1/admin/ad-networks/{id}/credentials)")
        }
        guard owner == id else {
            throw ProblemDetails(.forbidden, reason: .credentialMismatch, detail: "this credential is not ad network \(id)'s")
        }
        return id
    }
}
