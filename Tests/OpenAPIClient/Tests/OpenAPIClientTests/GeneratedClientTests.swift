import AttributionCrypto
import AttributionModel
import CryptoPrimitives
import Foundation
import HTTPTypes
import OpenAPIRuntime
import OpenAPIURLSession
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A client generated from the OpenAPI document alone (swift-openapi-generator's build plugin; this
/// target's `openapi.json` is the document ingest serves) against the real admin service and ingest:
/// what an integrator who starts from the document gets, typed answers included.
@Suite("A client generated from the OpenAPI document")
struct GeneratedClientTests {
    static let network = "generated.adattributionkit"
    static let app = 1_108_187_399

    @Test func itRegistersAnAdNetworkAndAnAppAndReportsAnImpression() async throws {
        let redis = try await RedisServer.start()
        defer { redis.stop() }
        let token = "generated-client-admin-token-of-at-least-32-characters"
        let (adminPort, ingestPort) = (try freeLoopbackPort(), try freeLoopbackPort())
        let common = ["REDIS_URL": redis.url, "LOG_LEVEL": "warning"]
        let adminProcess = try ServiceProcess(
            "admin", common.merging(["HTTP_PORT": "\(adminPort)", "ADMIN_TOKEN": token]) { $1 })
        defer { adminProcess.stop() }
        let ingestProcess = try ServiceProcess(
            "ingest", common.merging(["HTTP_PORT": "\(ingestPort)", "OPERATIONS_HTTP_PORT": "\(try freeLoopbackPort())"]) { $1 })
        defer { ingestProcess.stop() }
        let transport = URLSessionTransport()
        let admin = Client(
            serverURL: URL(string: "http://127.0.0.1:\(adminPort)")!, transport: transport,
            middlewares: [BearerToken(token: token)])
        let events = Client(serverURL: URL(string: "http://127.0.0.1:\(ingestPort)")!, transport: transport)
        try #require(try await Self.eventuallyHealthy(admin), "admin answers /health\n\(adminProcess.log())")
        try #require(try await Self.eventuallyHealthy(events), "ingest answers /health\n\(ingestProcess.log())")

        // The operator registers the network and the app, and issues the app's backend a key.
        let key = P256.Signing.PrivateKey()
        let registered = try await admin.putAdNetwork(
            path: .init(id: Self.network),
            body: .json(.init(publicKey: key.publicKey.pemRepresentation, postbackUrl: "https://postbacks.example/generated")))
        guard case .ok = registered else {
            Issue.record("putAdNetwork: \(registered)")
            return
        }
        let shown = try await admin.getAdNetwork(path: .init(id: Self.network))
        #expect(try shown.ok.body.json.postbackUrl == "https://postbacks.example/generated")
        let missing = try await admin.getAdNetwork(path: .init(id: "missing.adattributionkit"))
        #expect(try missing.notFound.body.applicationProblemJson.reason == .unknownAdNetwork, "\(missing)")
        guard case .ok = try await admin.putAdvertisedApp(path: .init(item: Self.app), body: .json(.init())) else {
            Issue.record("putAdvertisedApp")
            return
        }
        let appKey = try await admin.issueAppKey(path: .init(item: Self.app)).created.body.json.appKey
        #expect(!appKey.isEmpty)

        // The ad network's impression, as the device reports it: 202 with the event's id.
        let now = Int(Date().timeIntervalSince1970 * 1000)
        let payload = ImpressionPayload(
            impressionIdentifier: UUID().uuidString, adNetworkIdentifier: AdNetworkIdentifier(Self.network)!,
            advertisedItemIdentifier: ItemIdentifier(Self.app), publisherItemIdentifier: 0, sourceIdentifier: 1234,
            timestamp: Milliseconds(now))
        let jws = try CompactJWS.sign(payload: JSONCoding.encoder.encode(payload), keyID: Self.network, with: key)
        let reported = try await events.reportImpression(
            body: .json(
                .init(
                    deviceIdentifier: "generated-device", impression: jws,
                    interaction: .ClickInteraction(.init(_type: .click, time: now, loadedAt: now - 1000)))))
        #expect(try !reported.accepted.body.json.eventIdentifier.isEmpty, "\(reported)")
    }

    static func eventuallyHealthy(_ client: Client) async throws -> Bool {
        for _ in 0..<200 {
            if case .ok = try? await client.getHealth() { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return false
    }
}

/// `Authorization: Bearer` on every request: the document's `bearer` security scheme, as a client adds it.
struct BearerToken: ClientMiddleware {
    let token: String

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        request.headerFields[.authorization] = "Bearer \(token)"
        return try await next(request, body, baseURL)
    }
}

/// One of the built executables running with `environment`, its output in a file of its own.
final class ServiceProcess {
    private let process: Process
    private let logFile: URL

    init(_ name: String, _ environment: [String: String]) throws {
        let directory = builtExecutables()
        logFile = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        let output = try FileHandle(forWritingTo: logFile)
        process = Process()
        process.executableURL = directory.appendingPathComponent(name)
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = output
        process.standardError = output
        try process.run()
    }

    func log() -> String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: logFile)
    }
}
