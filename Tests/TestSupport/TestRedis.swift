import Foundation
import PipelineLaunch
import RedisStreams

/// What a pipeline test runs on: one redis-server or a local Redis Cluster, the same way.
public protocol TestRedis: Sendable {
    /// `REDIS_URL` for the services (a cluster's seed node).
    var url: String { get }
    /// What the services set to reach it: `REDIS_URL`, and with TLS `REDIS_TLS_*`.
    var environment: [String: String] { get }
    /// `REDIS_CLUSTER` for the services.
    var cluster: Bool { get }
    /// A connection for the test itself (cluster-aware on a cluster).
    func connect(label: String) -> RedisConnection
    func stop()
}

extension RedisServer: TestRedis {
    public var cluster: Bool { false }
}

extension RedisCluster: TestRedis {
    public var url: String { self.configuration.url }
    public var environment: [String: String] { ["REDIS_URL": url] }
    public var cluster: Bool { true }
}

/// Which Redis a suite runs on.
public enum TestRedisKind: String, Sendable, CaseIterable, CustomStringConvertible {
    case single, cluster
    /// One redis-server, TLS only, demanding client certificates (`RedisServer.startTLS`).
    case tls

    /// The two engines, in plaintext: what a suite about the pipeline's rules rather than its transport runs on.
    public static let engines: [TestRedisKind] = [.single, .cluster]

    /// Starts one (a cluster: six nodes, 3 primaries with a replica each, replicas in sync).
    public func start(appendOnly: Bool = false) async throws -> any TestRedis {
        switch self {
        case .single: try await RedisServer.start(appendOnly: appendOnly)
        case .cluster: try await RedisCluster.start()
        case .tls: try await RedisServer.startTLS(appendOnly: appendOnly)
        }
    }

    public var description: String { rawValue }
}

extension RedisServer {
    /// A TLS-only server with certificates of a CA made for it (`TestCertificates`): its own for
    /// 127.0.0.1 and `localhost`, and the client certificate it demands, which its connections and
    /// `environment` present.
    public static func startTLS(appendOnly: Bool = false, password: String? = nil) async throws -> RedisServer {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("redis-tls-\(UUID().uuidString)")
        let tls = try RedisServer.TLS.made(in: folder)
        return try await RedisServer.start(appendOnly: appendOnly, password: password, tls: tls)
    }

    /// `redis-cli`'s arguments to reach this server (its port, and with TLS its certificates).
    public var cliArguments: [String] {
        ["-p", String(port)] + (tls?.cliArguments ?? [])
    }
}
