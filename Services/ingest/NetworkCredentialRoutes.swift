import AttributionModel
import Foundation
import Hummingbird
import RedisStreams
import ServiceRuntime

/// An ad network's credentials. The admin service issues (`POST …/credentials`, shown once),
/// lists and revokes them; on the public listener a credential reads its own network's registration
/// (`GET /v1/ad-networks/{id}`) and refusals (`…/rejections`), and nothing else: an ad network can see
/// why its impressions were refused without holding `ADMIN_TOKEN`. Several may be live, for rotation.
struct NetworkCredentialRoutes {
    let redis: RedisConnection
    let clock: @Sendable () -> Milliseconds

    var credentials: IssuedSecrets { IssuedSecrets.networkCredentials(redis) }

    func addAdmin(to admin: some RouterMethods<BasicRequestContext>, prefix: String, catalog: RouteCatalog) {
        let credentials = credentials
        catalog.on(admin, prefix: prefix, .post, "/ad-networks/:id/credentials") { _, context in
            let id = try Self.network(context).rawValue
            guard try await redis.send(RedisCommand("HEXISTS", RegistryKeys.adNetworks, id)).int == 1 else {
                throw ProblemDetails(.notFound, reason: .unknownAdNetwork, detail: "register ad network \(id) first")
            }
            let issuedAt = clock()
            let issued = try await credentials.issue(to: id, at: issuedAt)
            let answer: [String: Any] = [
                "credential": issued.secret, "ad-network-identifier": id, "credential-identifier": issued.identifier,
                "issued-at": issuedAt,
            ]
            return try AdminRoutes.json(object: answer, status: .created)
        }
        catalog.on(admin, prefix: prefix, .get, "/ad-networks/:id/credentials") { _, context in
            let id = try Self.network(context).rawValue
            let listed = try await credentials.list(of: id, identifierKey: "credential-identifier")
            return try AdminRoutes.json(object: ["ad-network-identifier": id, "credentials": listed])
        }
        catalog.on(admin, prefix: prefix, .delete, "/ad-networks/:id/credentials/:credential") { _, context in
            let id = try Self.network(context).rawValue
            let credential = try context.parameters.require("credential")
            guard try await credentials.revoke(credential, of: id) else {
                throw ProblemDetails(
                    .notFound, reason: .unknownCredential, detail: "ad network \(id) has no credential \(credential.prefix(40))")
            }
            return try AdminRoutes.json(
                object: ["ad-network-identifier": id, "credential-identifier": credential, "revoked": true])
        }
    }

    func addPublic(to router: Router<BasicRequestContext>, catalog: RouteCatalog) {
        catalog.on(router, .get, "/v1/ad-networks/:id") { request, context in
            let id = try await authorized(request, context)
            guard let json = try await redis.send(RedisCommand("HGET", RegistryKeys.adNetworks, id)).bytes else {
                throw ProblemDetails(.notFound, reason: .unknownAdNetwork, detail: "ad network \(id) is not registered")
            }
            return AdminRoutes.json(json)
        }
        catalog.on(router, .get, "/v1/ad-networks/:id/rejections") { request, context in
            let id = try await authorized(request, context)
            return try await AdminRoutes.recentRejections(redis, RejectionLog.networkKey(id), unsignedOf: id)
        }
    }

    /// The network the path names, once the bearer is one of its credentials: 401 without a live
    /// credential, 403 `credential-mismatch` with another network's.
    func authorized(_ request: Request, _ context: BasicRequestContext) async throws -> String {
        let id = try Self.network(context).rawValue
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer "),
            let owner = try await credentials.owner(of: String(header.dropFirst(7)))
        else {
            throw ProblemDetails(
                .unauthorized, reason: .unauthorized,
                detail: "ad-network routes need one of the network's credentials (POST /v1/admin/ad-networks/{id}/credentials)")
        }
        guard owner == id else {
            throw ProblemDetails(.forbidden, reason: .credentialMismatch, detail: "this credential is not ad network \(id)'s")
        }
        return id
    }

    static func network(_ context: BasicRequestContext) throws -> AdNetworkIdentifier {
        try RequestParameters.adNetwork(try context.parameters.require("id"))
    }
}
