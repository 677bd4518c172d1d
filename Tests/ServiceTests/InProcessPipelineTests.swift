import AdminService
import AttributionCrypto
import AttributionModel
import AttributionWinnerService
import CryptoPrimitives
import DispatcherService
import Foundation
import Hummingbird
import IngestService
import PipelineCatalog
import RedisStreams
import SchedulerService
import ServiceRuntime
import Synchronization
import TestSupport
import Testing
import VerifierService

/// The six services built in-process by their `build`, on a real redis-server: requests through
/// ingest's and admin's routers in-process, the stages' groups in tasks, postbacks to a receiver in the
/// test.
@Suite("Services in-process")
struct InProcessPipelineTests {
    static let network = "in-process.adattributionkit"
    static let publisher: ItemIdentifier = 1_200
    static let app: ItemIdentifier = 3_400

    static func now() -> Milliseconds { Milliseconds(Date().timeIntervalSince1970 * 1000) }

    /// Registers the network (postbacks to `postbackURL`), a publisher listing it and the app through
    /// the admin router; returns the app's key.
    static func register(admin: Router<BasicRequestContext>, key: P256.Signing.PrivateKey, postbackURL: String)
        async throws -> String
    {
        let pem = key.publicKey.pemRepresentation.replacingOccurrences(of: "\n", with: "\\n")
        for (path, json) in [
            ("ad-networks/\(network)", #"{"public-key": "\#(pem)", "postback-url": "\#(postbackURL)"}"#),
            ("publisher-apps/\(publisher)", #"{"AdNetworkIdentifiers": ["\#(network)"]}"#),
            ("advertised-apps/\(app)", "{}"),
        ] {
            let reply = try await send(admin, .put, "/v1/admin/\(path)", json: json, token: InProcessServices.adminToken)
            try #require(reply.status == .ok, "\(path): \(reply.body)")
        }
        let issued = try await send(admin, .post, "/v1/admin/advertised-apps/\(app)/keys", token: InProcessServices.adminToken)
        let object = try JSONSerialization.jsonObject(with: Data(issued.body.utf8)) as? [String: Any]
        return try #require(object?["app-key"] as? String, "\(issued.body)")
    }

    static func impression(_ key: P256.Signing.PrivateKey, device: String, at time: Milliseconds) throws -> String {
        let payload = ImpressionPayload(
            impressionIdentifier: UUID().uuidString, adNetworkIdentifier: AdNetworkIdentifier(network)!,
            advertisedItemIdentifier: app, publisherItemIdentifier: publisher, sourceIdentifier: 4_321, timestamp: time)
        let jws = try CompactJWS.sign(payload: JSONCoding.encoder.encode(payload), keyID: network, with: key)
        return
            #"{"device-identifier": "\#(device)", "impression": "\#(jws)", "interaction": {"type": "click", "loaded-at": \#(time), "time": \#(time + 1)}}"#
    }

    /// ingest's and admin's routers in-process: the admin API only on admin's, `/metrics` only on
    /// ingest's operations router, an impression from a registered network acknowledged and on
    /// `events`, a malformed one refused with its reason and nothing written.
    @Test func ingestRoutesInProcess() async throws {
        let redis = try await RedisServer.start()
        defer { redis.stop() }
        let services = InProcessServices(redis: redis)
        let ingest = try services.service("ingest")
        let assembly = try await Ingest.build(try IngestSettings(services.environment, ingest.settings), service: ingest)
        let adminService = try services.service("admin")
        let admin = try await Admin.build(try AdminSettings(services.environment, adminService.settings), service: adminService)
        let operations = try #require(assembly.operationsRouter)
        let key = P256.Signing.PrivateKey()
        let connection = redis.connect()
        try await running([assembly, admin]) {
            _ = try await Self.register(admin: admin.router, key: key, postbackURL: "https://example.com/postbacks")
            for router in [assembly.router, operations] {
                let elsewhere = try await send(
                    router, .put, "/v1/admin/advertised-apps/9", json: "{}", token: InProcessServices.adminToken)
                #expect(elsewhere.status == .notFound, "only admin serves the admin API")
            }
            #expect(try await send(assembly.router, .get, "/metrics").status == .notFound)
            #expect(try await send(operations, .get, "/metrics").status == .ok)

            let accepted = try await send(
                assembly.router, .post, "/v1/impressions", json: try Self.impression(key, device: "d-1", at: Self.now()))
            #expect(accepted.status == .accepted, "\(accepted.body)")
            let refused = try await send(assembly.router, .post, "/v1/impressions", json: #"{"device-identifier": "d-2"}"#)
            #expect(refused.status == .badRequest && refused.body.contains(#""reason""#), "\(refused.body)")
            var written = 0
            for stream in StreamNames.events.all(Partitioning()) { written += try await streamLength(stream, on: connection) }
            #expect(written == 1, "only the accepted impression is on events")
        }
    }

    /// Every service's `build`, run in-process: an impression and an install through ingest's router,
    /// a locked value update, and the signed winning postback at the receiver within its scaled delay.
    @Test func aPostbackThroughEveryServiceInProcess() async throws {
        let redis = try await RedisServer.start()
        defer { redis.stop() }
        let services = InProcessServices(redis: redis)
        let receiver = try await PostbackReceiver.start()
        defer { receiver.stop() }

        let ingest = try services.service("ingest")
        let ingestAssembly = try await Ingest.build(
            try IngestSettings(services.environment, ingest.settings), service: ingest)
        let adminService = try services.service("admin")
        let adminAssembly = try await Admin.build(
            try AdminSettings(services.environment, adminService.settings), service: adminService)
        let verifier = try services.service("verifier")
        let winner = try services.service("attribution-winner")
        let scheduler = try services.service("scheduler")
        let dispatcher = try services.service("dispatcher")
        let stages = [
            try await Verifier.build(try Verifier.Settings(services.environment, verifier.settings), service: verifier),
            try await AttributionWinner.build(
                try AttributionWinner.Settings(services.environment, winner.settings), service: winner),
            try await Scheduler.build(try Scheduler.Settings(services.environment, scheduler.settings), service: scheduler),
            try await Dispatcher.build(
                try Dispatcher.Settings(services.environment, dispatcher.settings), service: dispatcher),
        ]
        let key = P256.Signing.PrivateKey()
        try await running([ingestAssembly, adminAssembly] + stages) {
            let appKey = try await Self.register(
                admin: adminAssembly.router, key: key, postbackURL: "\(receiver.url)/postbacks")
            let device = "device-\(UUID().uuidString)"
            let clicked = try await send(
                ingestAssembly.router, .post, "/v1/impressions",
                json: try Self.impression(key, device: device, at: Self.now() - 2_000))
            try #require(clicked.status == .accepted, "\(clicked.body)")
            try await Task.sleep(for: .milliseconds(300))
            let installAt = Self.now()
            let install = try await send(
                ingestAssembly.router, .post, "/v1/conversions",
                json:
                    #"{"device-identifier": "\#(device)", "advertised-item-identifier": \#(Self.app), "conversion-type": "download", "time": \#(installAt), "country-code": "US"}"#,
                token: appKey)
            try #require(install.status == .accepted, "\(install.body)")
            let update = try await send(
                ingestAssembly.router, .post, "/v1/conversion-value-updates",
                json:
                    #"{"device-identifier": "\#(device)", "advertised-item-identifier": \#(Self.app), "time": \#(installAt + 10), "fineConversionValue": 42, "coarseConversionValue": "high", "lockPostback": true}"#,
                token: appKey)
            try #require(update.status == .accepted, "\(update.body)")

            // Locked at once: due 24–48 scaled hours later (1–2 s), then signed and POSTed.
            let arrived = try await eventually(timeout: .seconds(30), every: .milliseconds(100)) {
                !receiver.bodies().isEmpty
            }
            try #require(arrived, "the winning postback arrives")
            // Signed by the dispatcher's key, as the JWKS ingest serves publishes it.
            let jwks = try await send(ingestAssembly.router, .get, "/.well-known/jwks.json")
            let keys = try JSONDecoder().decode(JWKSet.self, from: Data(jwks.body.utf8))
            let postback = try PostbackVerifier.verify(body: Data(receiver.bodies()[0].utf8), keys: keys)
            #expect(postback.payload.didWin && postback.payload.adNetworkIdentifier.rawValue == Self.network)
            #expect(postback.payload.advertisedItemIdentifier == Self.app && postback.payload.postbackSequenceIndex == 0)
        }
    }
}

/// A receiver of postbacks: a Hummingbird server on a free loopback port, keeping every body.
final class PostbackReceiver: Sendable {
    let url: String
    private let received = Mutex<[String]>([])
    private let task = Mutex<Task<Void, any Error>?>(nil)

    private init(port: Int) { url = "http://127.0.0.1:\(port)" }

    func bodies() -> [String] { received.withLock { $0 } }
    func stop() { task.withLock { $0?.cancel() } }

    /// Returns once the server listens.
    static func start() async throws -> PostbackReceiver {
        let port = try freeLoopbackPort()
        let receiver = PostbackReceiver(port: port)
        let router = Router()
        router.post("/postbacks") { request, _ -> HTTPResponse.Status in
            let buffer = try await request.body.collect(upTo: 1 << 20)
            receiver.received.withLock { $0.append(String(buffer: buffer)) }
            return .ok
        }
        let (listening, signal) = AsyncStream<Void>.makeStream()
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)),
            onServerRunning: { _ in signal.yield() })
        receiver.task.withLock { $0 = Task { try await app.runService() } }
        var iterator = listening.makeAsyncIterator()
        _ = await iterator.next()
        return receiver
    }
}
