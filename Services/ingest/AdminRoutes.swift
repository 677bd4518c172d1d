import AttributionCrypto
import AttributionModel
import Foundation
import Hummingbird
import RedisStreams
import ServiceRuntime

/// The admin API behind the bearer token: ad networks (with key rotation), publisher apps, advertised
/// apps (JSON or Info.plist) and their app keys, and the recent refusals an ad network or app can
/// inspect. Registrations are JSON in the `registry:*` hashes, which ingest owns.
struct AdminRoutes {
    let redis: RedisConnection
    let adminToken: String
    let keyRotationGrace: Milliseconds
    /// Checked without DNS here (syntax, https, IP literals); the dispatcher checks resolved addresses
    /// before every POST, since a name's answers can change after registration.
    let destinations: DestinationPolicy

    func add(to router: Router<BasicRequestContext>, catalog: RouteCatalog) {
        let prefix = "/v1/admin"
        let admin = router.group(RouterPath(prefix)).add(middleware: BearerTokenMiddleware(token: Array(adminToken.utf8)))
        catalog.on(admin, prefix: prefix, .put, "/ad-networks/:id") { request, context in
            try await putAdNetwork(try network(context), request)
        }
        catalog.on(admin, prefix: prefix, .get, "/ad-networks/:id") { _, context in
            let id = try network(context)
            guard let json = try await redis.send(RedisCommand("HGET", RegistryKeys.adNetworks, id.rawValue)).bytes else {
                throw ProblemDetails(.notFound, reason: "unknown-ad-network", detail: "ad network \(id) is not registered")
            }
            return Self.json(json)
        }
        catalog.on(admin, prefix: prefix, .get, "/ad-networks/:id/rejections") { _, context in
            try await recentRejections(RejectionLog.networkKey(try network(context).rawValue))
        }
        catalog.on(admin, prefix: prefix, .put, "/publisher-apps/:item") { request, context in
            let item = try Self.itemIdentifier(context)
            let body = try await request.decodeJSON(IngestRequests.PublisherApp.self, limit: 65_536)
            var networks: [AdNetworkIdentifier] = []
            for id in body.adNetworkIdentifiers {
                guard let network = AdNetworkIdentifier(id) else {
                    throw ProblemDetails.badRequest(
                        "invalid-ad-network-identifier",
                        "AdNetworkIdentifiers holds \(id), which is not a lowercase ad network id")
                }
                networks.append(network)
            }
            let configuration = PublisherAppConfiguration(itemIdentifier: item, adNetworkIdentifiers: networks)
            return try await store(configuration, in: RegistryKeys.publisherApps, field: String(item))
        }
        catalog.on(admin, prefix: prefix, .put, "/advertised-apps/:item") { request, context in
            let item = try Self.itemIdentifier(context)
            let body = try await request.collectBody(limit: 262_144)
            let app: IngestRequests.AdvertisedApp
            do {
                app = try AdvertisedAppBody.decode(body, contentType: request.headers[.contentType])
            } catch let problem as AdvertisedAppBody.Problem {
                throw ProblemDetails.badRequest(problem.reason, problem.detail)
            }
            let configuration = app.configuration(itemIdentifier: item)
            if let problem = configuration.validationProblems().first {
                throw ProblemDetails.badRequest("value-out-of-range", problem.description)
            }
            if let endpoint = configuration.attributionCopyEndpoint {
                guard let report = CopyEndpoint.reportURL(for: endpoint) else {
                    throw ProblemDetails.badRequest(
                        "invalid-copy-endpoint",
                        "AttributionCopyEndpoint must be an https URL with a domain, e.g. https://example.com")
                }
                try checkDestination(report, field: "AttributionCopyEndpoint")
            }
            return try await store(configuration, in: RegistryKeys.advertisedApps, field: String(item))
        }
        catalog.on(admin, prefix: prefix, .post, "/advertised-apps/:item/keys") { _, context in
            let item = try Self.itemIdentifier(context)
            guard try await redis.send(RedisCommand("HEXISTS", RegistryKeys.advertisedApps, String(item))).int == 1 else {
                throw ProblemDetails(.notFound, reason: "unknown-advertised-app", detail: "register advertised app \(item) first")
            }
            // Shown once: only its hash is stored.
            let key = AppKeys.generate()
            _ = try await redis.send(RedisCommand("HSET", RegistryKeys.appKeys, AppKeys.hash(key), String(item)))
            return Response.json(["app-key": key, "advertised-item-identifier": String(item)], status: .created)
        }
        catalog.on(admin, prefix: prefix, .get, "/advertised-apps/:item/rejections") { _, context in
            try await recentRejections(RejectionLog.appKey(String(try Self.itemIdentifier(context))))
        }
        DeadLetterRoutes(redis: redis).add(to: admin, prefix: prefix, catalog: catalog)
        DeviceErasure(redis: redis).add(to: admin, prefix: prefix, catalog: catalog)
        SchemaRoutes(redis: redis, maxBodyBytes: 262_144, publisher: EventPublisher(redis: redis))
            .addAdmin(to: admin, prefix: prefix, catalog: catalog)
    }

    private func putAdNetwork(_ network: AdNetworkIdentifier, _ request: Request) async throws -> Response {
        let body = try await request.decodeJSON(IngestRequests.AdNetwork.self, limit: 16_384)
        let key: JWK
        do { key = JWK(publicKey: try JWK.parsePublicKey(body.publicKey), keyID: network.rawValue) } catch {
            throw ProblemDetails.badRequest("invalid-public-key", "public-key: \(error)")
        }
        try checkDestination(body.postbackURL, field: "postback-url")
        if let grace = body.previousKeyGraceSeconds, !(0...2_592_000).contains(grace) {
            throw ProblemDetails.badRequest("value-out-of-range", "previous-key-grace-seconds must be within 0–2592000 (30 days)")
        }
        if let skan = body.skanPublicKey, skan.isEmpty || skan.utf8.count > 4_096 {
            throw ProblemDetails.badRequest("invalid-public-key", "skan-public-key must be base64 SPKI or PEM")
        }
        let existing = try await redis.send(RedisCommand("HGET", RegistryKeys.adNetworks, network.rawValue)).bytes
            .flatMap { try? JSONCoding.decoder.decode(AdNetworkRegistration.self, from: Data($0)) }
        let registration =
            existing?.rotated(
                to: key.jsonString, postbackURL: body.postbackURL, skanPublicKey: body.skanPublicKey,
                at: WallClock.nowMilliseconds(),
                grace: body.previousKeyGraceSeconds.map { Milliseconds($0) * 1000 } ?? keyRotationGrace)
            ?? AdNetworkRegistration(
                adNetworkIdentifier: network, publicKey: key.jsonString, postbackURL: body.postbackURL,
                skanPublicKey: body.skanPublicKey)
        return try await store(registration, in: RegistryKeys.adNetworks, field: network.rawValue)
    }

    /// Refuses a URL postbacks may not go to (http, a private address literal, localhost) with the
    /// policy's reason; `invalid-postback-url` keeps its historical name for a malformed URL.
    private func checkDestination(_ url: String, field: String) throws {
        guard let refusal = destinations.check(url: url) else { return }
        let reason = refusal == .invalid && field == "postback-url" ? "invalid-postback-url" : refusal.rawValue
        let detail =
            switch refusal {
            case .invalid: "\(field) must be an absolute https URL"
            case .notHTTPS: "\(field) must use https"
            case .privateAddress: "\(field) points at a loopback, private or otherwise non-public address"
            case .unresolvable: "\(field): its host does not resolve"
            }
        throw ProblemDetails.badRequest(reason, detail)
    }

    private func recentRejections(_ key: String) async throws -> Response {
        let items = try await redis.send(RedisCommand("LRANGE", key, "0", String(RejectionLog.capacity - 1))).elements
        let json = "{\"rejections\":[" + items.compactMap(\.string).joined(separator: ",") + "]}"
        return Self.json(Array(json.utf8))
    }

    private func network(_ context: BasicRequestContext) throws -> AdNetworkIdentifier {
        guard let network = AdNetworkIdentifier(try context.parameters.require("id")) else {
            throw ProblemDetails.badRequest(
                "invalid-ad-network-identifier", "ad network ids are lowercase letters, digits, '.', '-' and '_'")
        }
        return network
    }

    static func itemIdentifier(_ context: BasicRequestContext) throws -> ItemIdentifier {
        guard let item = ItemIdentifier(try context.parameters.require("item")), item > 0 else {
            throw ProblemDetails.badRequest("invalid-item-identifier", "item ids are positive integers")
        }
        return item
    }

    private func store(_ value: some Encodable, in hash: String, field: String) async throws -> Response {
        let json = try JSONCoding.encoder.encode(value)
        _ = try await redis.send(RedisCommand(bytes: [Array("HSET".utf8), Array(hash.utf8), Array(field.utf8), Array(json)]))
        return Self.json(Array(json))
    }

    /// The admin API's JSON answers (and the schema and erasure routes').
    static func json(_ bytes: [UInt8], status: HTTPResponse.Status = .ok) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    static func json(object: [String: Any]) throws -> Response {
        json(Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])))
    }
}
