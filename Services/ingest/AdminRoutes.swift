import AttributionCrypto
import AttributionModel
import Foundation
import Hummingbird
import RedisStreams
import ServiceRuntime

/// The admin API: ad networks, publisher apps and advertised apps, behind the bearer token.
/// Registrations are stored as JSON in the `registry:*` hashes, which ingest owns.
struct AdminRoutes {
    let redis: RedisConnection
    let adminToken: String

    func add(to router: Router<BasicRequestContext>) {
        let admin = router.group("/v1/admin").add(middleware: BearerTokenMiddleware(token: Array(adminToken.utf8)))
        admin.put("/ad-networks/:id") { request, context -> Response in
            let id = try context.parameters.require("id")
            guard let network = AdNetworkIdentifier(id) else {
                throw ProblemDetails.badRequest(
                    "invalid-ad-network-identifier", "ad network ids are lowercase letters, digits, '.', '-' and '_'")
            }
            let body = try await request.decodeJSON(IngestRequests.AdNetwork.self, limit: 16_384)
            let key: JWK
            do { key = JWK(publicKey: try JWK.parsePublicKey(body.publicKey), keyID: network.rawValue) } catch {
                throw ProblemDetails.badRequest("invalid-public-key", "\(error)")
            }
            guard let url = URL(string: body.postbackURL), url.scheme == "https" || url.scheme == "http", url.host != nil else {
                throw ProblemDetails.badRequest("invalid-postback-url", "postback-url must be an absolute http(s) URL")
            }
            let registration = AdNetworkRegistration(
                adNetworkIdentifier: network, publicKey: key.jsonString, postbackURL: body.postbackURL)
            return try await store(registration, in: RegistryKeys.adNetworks, field: network.rawValue)
        }
        admin.put("/publisher-apps/:item") { request, context -> Response in
            let item = try itemIdentifier(context)
            let body = try await request.decodeJSON(IngestRequests.PublisherApp.self, limit: 65_536)
            var networks: [AdNetworkIdentifier] = []
            for id in body.adNetworkIdentifiers {
                guard let network = AdNetworkIdentifier(id) else {
                    throw ProblemDetails.badRequest(
                        "invalid-ad-network-identifier", "AdNetworkIdentifiers holds \(id), which is not lowercase")
                }
                networks.append(network)
            }
            let configuration = PublisherAppConfiguration(itemIdentifier: item, adNetworkIdentifiers: networks)
            return try await store(configuration, in: RegistryKeys.publisherApps, field: String(item))
        }
        admin.put("/advertised-apps/:item") { request, context -> Response in
            let item = try itemIdentifier(context)
            let configuration = try await request.decodeJSON(IngestRequests.AdvertisedApp.self, limit: 65_536)
                .configuration(itemIdentifier: item)
            if let problem = configuration.validationProblems().first {
                throw ProblemDetails.badRequest("value-out-of-range", problem.description)
            }
            return try await store(configuration, in: RegistryKeys.advertisedApps, field: String(item))
        }
    }

    private func itemIdentifier(_ context: BasicRequestContext) throws -> ItemIdentifier {
        guard let item = ItemIdentifier(try context.parameters.require("item")), item > 0 else {
            throw ProblemDetails.badRequest("invalid-item-identifier", "item ids are positive integers")
        }
        return item
    }

    private func store(_ value: some Encodable, in hash: String, field: String) async throws -> Response {
        let json = try JSONCoding.encoder.encode(value)
        _ = try await redis.send(RedisCommand(bytes: [Array("HSET".utf8), Array(hash.utf8), Array(field.utf8), Array(json)]))
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: json)))
    }
}
