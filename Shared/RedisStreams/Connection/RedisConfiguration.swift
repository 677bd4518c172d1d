/// Where and how to connect to Redis.
public struct RedisConfiguration: Sendable, Equatable {
    /// Host name or IP address (IPv6 without brackets).
    public var host: String
    /// TCP port.
    public var port: Int
    /// Database index selected after connecting.
    public var database: Int
    /// How long a TCP connect may take.
    public var connectTimeoutMilliseconds: Int = 2_000
    /// How long one round trip may take; must exceed every `BLOCK` used on the connection.
    public var commandTimeoutMilliseconds: Int = 5_000
    /// Redis Cluster mode: `host:port` is a seed node, commands are routed by hash slot to the primary
    /// serving it, following `MOVED` and `ASK`. A cluster has only database 0 (see `validate()`).
    public var cluster: Bool = false
    /// Single-node mode: reject transactions, scripts and multi-key commands whose keys span several hash
    /// slots, as a cluster would, so tests on one node catch key layouts that would break on a cluster.
    /// Off by default: no slot is computed at all. Cluster mode always checks.
    public var checksSlots: Bool = false

    /// A configuration from its parts.
    public init(host: String = "127.0.0.1", port: Int = 6379, database: Int = 0) {
        self.host = host
        self.port = port
        self.database = database
    }

    /// Parses `redis://host[:port][/db]`; port defaults to 6379, db to 0, IPv6 hosts go in brackets.
    public init(url: String) throws {
        let scheme = "redis://"
        guard url.hasPrefix(scheme) else {
            throw RedisError(.invalidConfiguration, "redis URL must start with redis://: \(url)")
        }
        let rest = url.dropFirst(scheme.count)
        let slash = rest.firstIndex(of: "/")
        let authority = rest[..<(slash ?? rest.endIndex)]
        let path = slash.map { rest[rest.index(after: $0)...] } ?? ""

        // Credentials are not supported (no AUTH yet): reject rather than silently connect without them.
        guard !authority.contains("@") else {
            throw RedisError(.invalidConfiguration, "redis URL credentials are not supported: \(url)")
        }
        let (host, portText) = try Self.split(authority: authority, url: url)
        guard !host.isEmpty else {
            throw RedisError(.invalidConfiguration, "redis URL has no host: \(url)")
        }

        var port = 6379
        if let portText {
            guard let parsed = Int(portText), (1...65_535).contains(parsed) else {
                throw RedisError(.invalidConfiguration, "redis URL has an invalid port: \(url)")
            }
            port = parsed
        }

        var database = 0
        if !path.isEmpty {
            guard let parsed = Int(path), parsed >= 0 else {
                throw RedisError(.invalidConfiguration, "redis URL has an invalid database: \(url)")
            }
            database = parsed
        }
        self.init(host: String(host), port: port, database: database)
    }

    /// Throws `invalidConfiguration` for combinations no server accepts: a database other than 0 in
    /// cluster mode (Redis Cluster has no SELECT). Called by cluster routing before every call.
    public func validate() throws {
        if self.cluster, self.database != 0 {
            throw RedisError(
                .invalidConfiguration,
                "redis cluster mode needs database 0 (Redis Cluster has no other), not \(self.database)"
            )
        }
    }

    /// The configuration as a `redis://host:port/db` URL.
    public var url: String {
        let host = self.host.contains(":") ? "[\(self.host)]" : self.host
        return "redis://\(host):\(self.port)/\(self.database)"
    }

    /// Splits `host`, `host:port`, `[v6]` or `[v6]:port`; the port text is nil when absent.
    private static func split(authority: Substring, url: String) throws -> (Substring, Substring?) {
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else {
                throw RedisError(.invalidConfiguration, "redis URL has an unterminated IPv6 host: \(url)")
            }
            let host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.isEmpty { return (host, nil) }
            guard after.hasPrefix(":") else {
                throw RedisError(.invalidConfiguration, "redis URL has junk after the IPv6 host: \(url)")
            }
            return (host, after.dropFirst())
        }
        guard let colon = authority.firstIndex(of: ":") else { return (authority, nil) }
        return (authority[..<colon], authority[authority.index(after: colon)...])
    }
}
