import RedisStreams

/// What a pipeline test runs on: one redis-server or a local Redis Cluster, the same way.
public protocol TestRedis: Sendable {
    /// `REDIS_URL` for the services (a cluster's seed node).
    var url: String { get }
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
    public var cluster: Bool { true }
}

/// Which Redis a suite runs on.
public enum TestRedisKind: String, Sendable, CaseIterable, CustomStringConvertible {
    case single, cluster

    /// Starts one (a cluster: six nodes, 3 primaries with a replica each, replicas in sync).
    public func start() async throws -> any TestRedis {
        switch self {
        case .single: try await RedisServer.start()
        case .cluster: try await RedisCluster.start()
        }
    }

    public var description: String { rawValue }
}
