import AttributionModel
import Foundation
import HTTPAPI
import Hummingbird
import PipelineCatalog
import RedisStreams
import ServiceRuntime

/// An ad network's read-only credentials, for its own routes on ingest's public listener: issued
/// (`POST …/credentials`, shown once), listed (ids and issue times) and revoked. Several may be live at
/// once, for rotation.
struct NetworkCredentialRoutes {
    let redis: RedisConnection
    let clock: @Sendable () -> Milliseconds

    var credentials: IssuedSecrets { IssuedSecrets.networkCredentials(redis) }

    func add(to admin: some RouterMethods<BasicRequestContext>, prefix: String, catalog: RouteCatalog) {
        let credentials = credentials
        catalog.on(admin, prefix: prefix, .post, "/ad-networks/:id/credentials") { _, context in
            let id = try PathParameters.adNetwork(context).rawValue
            guard try await redis.send(RedisCommand("HEXISTS", RegistryKeys.adNetworks, id)).int == 1 else {
                throw ProblemDetails(.notFound, reason: .unknownAdNetwork, detail: "register ad network \(id) first")
            }
            let issuedAt = clock()
            let issued = try await credentials.issue(to: id, at: issuedAt)
            let answer: [String: Any] = [
                "credential": issued.secret, "ad-network-identifier": id, "credential-identifier": issued.identifier,
                "issued-at": issuedAt,
            ]
            return try JSONAnswer.object(answer, status: .created)
        }
        catalog.on(admin, prefix: prefix, .get, "/ad-networks/:id/credentials") { _, context in
            let id = try PathParameters.adNetwork(context).rawValue
            let listed = try await credentials.list(of: id, identifierKey: "credential-identifier")
            return try JSONAnswer.object(["ad-network-identifier": id, "credentials": listed])
        }
        catalog.on(admin, prefix: prefix, .delete, "/ad-networks/:id/credentials/:credential") { _, context in
            let id = try PathParameters.adNetwork(context).rawValue
            let credential = try context.parameters.require("credential")
            guard try await credentials.revoke(credential, of: id) else {
                throw ProblemDetails(
                    .notFound, reason: .unknownCredential, detail: "ad network \(id) has no credential \(credential.prefix(40))")
            }
            return try JSONAnswer.object(
                ["ad-network-identifier": id, "credential-identifier": credential, "revoked": true])
        }
    }
}
