import AttributionCrypto
import AttributionModel
import Foundation
import HTTPAPI
import Hummingbird
import PipelineCatalog
import RedisStreams
import ServiceRuntime

/// The admin API behind the bearer token, served by the admin service: ad networks (with key rotation)
/// and their read-only credentials, publisher apps, advertised apps (JSON or Info.plist) and their app
/// keys, deleting any of the three, and the recent refusals an ad network or app can inspect.
/// Registrations are JSON in the `registry:*` hashes, which only admin writes.
struct AdminRoutes {
    let redis: RedisConnection
    let adminToken: String
    let keyRotationGrace: Milliseconds
    /// Checked without DNS here (syntax, https, IP literals); the dispatcher checks resolved addresses
    /// before every POST, since a name's answers can change after registration.
    let destinations: DestinationPolicy
    let partitioning: Partitioning
    let clock: @Sendable () -> Milliseconds

    init(redis: RedisConnection, settings: AdminSettings) {
        self.redis = redis
        adminToken = settings.adminToken
        keyRotationGrace = settings.keyRotationGrace
        destinations = settings.destinations
        partitioning = settings.partitioning
        clock = settings.clock
    }

    func add(to router: Router<BasicRequestContext>, catalog: RouteCatalog) {
        let prefix = "/v1/admin"
        let admin = router.group(RouterPath(prefix)).add(middleware: BearerTokenMiddleware(token: Array(adminToken.utf8)))
        catalog.on(admin, prefix: prefix, .put, "/ad-networks/:id") { request, context in
            try await putAdNetwork(try PathParameters.adNetwork(context), request)
        }
        catalog.on(admin, prefix: prefix, .get, "/ad-networks/:id") { _, context in
            let id = try PathParameters.adNetwork(context)
            guard let json = try await redis.send(RedisCommand("HGET", RegistryKeys.adNetworks, id.rawValue)).bytes else {
                throw ProblemDetails(.notFound, reason: .unknownAdNetwork, detail: "ad network \(id) is not registered")
            }
            return JSONAnswer.bytes(json)
        }
        catalog.on(admin, prefix: prefix, .get, "/ad-networks/:id/rejections") { _, context in
            let id = try PathParameters.adNetwork(context).rawValue
            return try await JSONAnswer.recentRejections(redis, RejectionLog.networkKey(id), unsignedOf: id)
        }
        catalog.on(admin, prefix: prefix, .put, "/publisher-apps/:item") { request, context in
            let item = try PathParameters.item(context)
            let body = try await request.decodeJSON(IngestRequests.PublisherApp.self, limit: 65_536)
            let configuration = try body.configuration(itemIdentifier: item)
            return try await store(configuration, in: RegistryKeys.publisherApps, field: String(item))
        }
        // What is stored, as the PUT answered it: an operator can read back any registration.
        catalog.on(admin, prefix: prefix, .get, "/publisher-apps/:item") { _, context in
            let item = try PathParameters.item(context)
            guard let json = try await redis.send(RedisCommand("HGET", RegistryKeys.publisherApps, String(item))).bytes else {
                throw ProblemDetails(.notFound, reason: .unknownPublisherApp, detail: "publisher app \(item) is not registered")
            }
            return JSONAnswer.bytes(json)
        }
        catalog.on(admin, prefix: prefix, .get, "/advertised-apps/:item") { _, context in
            let item = try PathParameters.item(context)
            guard let json = try await redis.send(RedisCommand("HGET", RegistryKeys.advertisedApps, String(item))).bytes else {
                throw ProblemDetails(.notFound, reason: .unknownAdvertisedApp, detail: "advertised app \(item) is not registered")
            }
            // As a PUT body, so it can be edited and sent back: the item is the path's, not a key of its own.
            guard var object = try JSONSerialization.jsonObject(with: Data(json)) as? [String: Any] else {
                return JSONAnswer.bytes(json)
            }
            object["item-identifier"] = nil
            return try JSONAnswer.object(object)
        }
        catalog.on(admin, prefix: prefix, .put, "/advertised-apps/:item") { request, context in
            let item = try PathParameters.item(context)
            let body = try await request.collectBody(limit: 262_144)
            let decoded = try AdvertisedAppBody.decodeReporting(body, contentType: request.headers[.contentType])
            let uploaded = try decoded.app.configuration(itemIdentifier: item, destinations: destinations)
            // Accepted but not honoured or not read: stored without them, and said so in the answer (never
            // a silent drop).
            let stored = try await written(uploaded.withoutIgnoredKeys(), in: RegistryKeys.advertisedApps, field: String(item))
            let ignored = decoded.ignored + uploaded.ignoredKeys()
            guard !ignored.isEmpty, var object = try JSONSerialization.jsonObject(with: Data(stored)) as? [String: Any] else {
                return JSONAnswer.bytes(stored)
            }
            object["ignored"] = ignored
            return try JSONAnswer.object(object)
        }
        AppKeyRoutes(redis: redis, clock: clock).add(to: admin, prefix: prefix, catalog: catalog)
        NetworkCredentialRoutes(redis: redis, clock: clock).add(to: admin, prefix: prefix, catalog: catalog)
        let testPostbacks = TestPostbackRequests(redis: redis, partitioning: partitioning, clock: clock)
        catalog.on(admin, prefix: prefix, .post, "/ad-networks/:id/test-postbacks") { request, context in
            try await testPostbacks.send(for: try PathParameters.adNetwork(context).rawValue, request)
        }
        RegistrationDeletion(redis: redis).add(to: admin, prefix: prefix, catalog: catalog)
        catalog.on(admin, prefix: prefix, .get, "/advertised-apps/:item/rejections") { _, context in
            try await JSONAnswer.recentRejections(redis, RejectionLog.appKey(String(try PathParameters.item(context))))
        }
        DeadLetterRoutes(redis: redis, partitioning: partitioning, clock: clock).add(to: admin, prefix: prefix, catalog: catalog)
        DeviceErasure(redis: redis, partitioning: partitioning).add(to: admin, prefix: prefix, catalog: catalog)
        SchemaRoutes(redis: redis).add(to: admin, prefix: prefix, catalog: catalog)
    }

    private func putAdNetwork(_ network: AdNetworkIdentifier, _ request: Request) async throws -> Response {
        let body = try await request.decodeJSON(IngestRequests.AdNetwork.self, limit: 16_384)
        let key: JWK
        do { key = JWK(publicKey: try JWK.parsePublicKey(body.publicKey), keyID: network.rawValue) } catch {
            throw ProblemDetails.badRequest(.invalidPublicKey, "public-key: \(error)")
        }
        try body.validate(destinations: destinations)
        // Parsed as the verifier will parse it, so a key it could never use is refused now, not on the
        // network's first SKAdNetwork impression.
        if let skan = body.skanPublicKey {
            do { _ = try SKANPublicKey(parsing: skan) } catch {
                throw ProblemDetails.badRequest(.invalidPublicKey, "skan-public-key: \(error)")
            }
        }
        let existing = try await redis.send(RedisCommand("HGET", RegistryKeys.adNetworks, network.rawValue))
            .decodedJSON(as: AdNetworkRegistration.self)
        let registration = body.registration(
            network, jwk: key.jsonString, existing: existing, now: clock(), defaultGrace: keyRotationGrace)
        return try await store(registration, in: RegistryKeys.adNetworks, field: network.rawValue)
    }

    private func store(_ value: some Encodable, in hash: String, field: String) async throws -> Response {
        JSONAnswer.bytes(try await written(value, in: hash, field: field))
    }

    /// Writes `value` as JSON into the registry hash and returns the JSON written.
    private func written(_ value: some Encodable, in hash: String, field: String) async throws -> [UInt8] {
        let json = try JSONCoding.encoder.encode(value)
        // The version after the write: the stages' registry caches see the change from their next batch.
        _ = try await redis.pipeline([
            RedisCommand(bytes: [Array("HSET".utf8), Array(hash.utf8), Array(field.utf8), Array(json)]), RegistryCache.bump,
        ])
        return Array(json)
    }
}
