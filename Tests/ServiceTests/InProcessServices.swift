import AttributionModel
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import ServiceLifecycle
import ServiceRuntime
import TestSupport

/// Services built in-process on a test Redis, as their `@main` builds them, without a child process:
/// settings from an environment of the test's, `build`, and the group run in a task.
struct InProcessServices {
    static let adminToken = "in-process-admin-token-of-at-least-32-characters"

    let redis: RedisServer
    /// Every service's environment: Redis, a scaled day, ports the system picks, loopback postbacks.
    let values: [String: String]

    init(redis: RedisServer, timeScale: Double = 86_400, _ extra: [String: String] = [:]) {
        self.redis = redis
        values = [
            "REDIS_URL": redis.url, "TIME_SCALE": String(timeScale), "LOG_LEVEL": "error", "HTTP_HOST": "127.0.0.1",
            "HTTP_PORT": "0", "OPERATIONS_HTTP_PORT": "0", "ADMIN_TOKEN": Self.adminToken, "CONSUMER_NAME": "in-process",
            "CLAIM_IDLE_MS": "1000", "CONVERSION_SETTLE_MS": "250", "WINDOW_CLOSE_GRACE_MS": "400",
            "POSTBACK_URL_ALLOWLIST": "127.0.0.1", "DEVELOPMENT_MODE": "true", "INGEST_QUEUE_TARGET_MS": "500",
        ].merging(extra) { $1 }
    }

    var environment: ServiceEnvironment { ServiceEnvironment(values) }

    /// The service `name` as `PipelineService.main` makes it, less the process-wide bootstrap.
    func service(_ name: String) throws -> PipelineService {
        PipelineService(settings: try PipelineSettings(name: name, environment: environment), stopsOnSignals: false)
    }
}

/// Runs the groups of `assemblies` while `body` runs, then shuts them down as SIGTERM would and waits
/// for them to stop.
func running<T: Sendable>(
    _ assemblies: [PipelineService.Assembly], _ body: () async throws -> T
) async throws -> T {
    let groups = assemblies.map(\.group)
    return try await withThrowingTaskGroup(of: Void.self) { tasks in
        for group in groups { tasks.addTask { try await group.run() } }
        do {
            let result = try await body()
            for group in groups { await group.triggerGracefulShutdown() }
            try await tasks.waitForAll()
            return result
        } catch {
            for group in groups { await group.triggerGracefulShutdown() }
            tasks.cancelAll()
            throw error
        }
    }
}

/// A JSON request through a router in-process (Hummingbird's `.router` test framework).
func send(
    _ router: Router<BasicRequestContext>, _ method: HTTPRequest.Method, _ uri: String, json: String? = nil,
    token: String? = nil
) async throws -> (status: HTTPResponse.Status, body: String) {
    var fields: HTTPFields = [:]
    if let token { fields[.authorization] = "Bearer \(token)" }
    if json != nil { fields[.contentType] = "application/json" }
    let headers = fields
    return try await Application(router: router).test(.router) { client in
        try await client.execute(uri: uri, method: method, headers: headers, body: json.map { ByteBuffer(string: $0) }) {
            ($0.status, String(buffer: $0.body))
        }
    }
}
