import Foundation
import TLSClient

/// Where and how to connect to Redis.
public struct RedisConfiguration: Sendable, Equatable {
    /// Host name or IP address (IPv6 without brackets).
    public var host: String
    /// TCP port.
    public var port: Int
    /// Database index selected after connecting.
    public var database: Int
    /// ACL user to `AUTH` as after connecting (nil: the `default` user).
    public var username: String?
    /// Password to `AUTH` with after connecting (nil: no `AUTH`). Never part of `url` or of a message.
    public var password: String?
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
    /// TLS (`rediss://`): what the connection trusts and presents; nil for plaintext (`redis://`). Every
    /// connection verifies the server's certificate and its name; there is no setting that skips either.
    public var tls: TLSClientConfiguration?
    /// The name the server's certificate must carry, sent as SNI: by default the host connected to (for
    /// a cluster, each node as the cluster announces it). For an IP address with no name given, the
    /// certificate must carry the address.
    public var tlsServerName: String?

    /// A configuration from its parts.
    /// The password a file holds (`REDIS_PASSWORD_FILE`, a mounted secret): its text without the line
    /// ending an editor or `echo` leaves; nil when it cannot be read.
    public static func password(fromFile path: String) -> String? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        var password = Substring(text)
        while password.last == "\n" || password.last == "\r" { password.removeLast() }
        return String(password)
    }

    public init(host: String = "127.0.0.1", port: Int = 6379, database: Int = 0) {
        self.host = host
        self.port = port
        self.database = database
    }

    /// Parses `redis://[user[:password]@]host[:port][/db]`, or `rediss://…` for TLS (the system's trust
    /// roots until `tls` says otherwise); port defaults to 6379, db to 0, IPv6 hosts go in brackets, user
    /// and password are percent-decoded (`redis://:password@host` authenticates as the `default` user).
    public init(url: String) throws {
        let secure = url.hasPrefix("rediss://")
        let scheme = secure ? "rediss://" : "redis://"
        guard url.hasPrefix(scheme) else {
            // Echoed only when it cannot hold a password.
            throw RedisError(
                .invalidConfiguration,
                "redis URL must start with redis:// or rediss:// (TLS)" + (url.contains("@") ? "" : ": \(url)"))
        }
        let rest = url.dropFirst(scheme.count)
        let slash = rest.firstIndex(of: "/")
        var authority = rest[..<(slash ?? rest.endIndex)]
        let path = slash.map { rest[rest.index(after: $0)...] } ?? ""
        // The credentials, if any, end at the last `@` (a password may hold one, percent-encoded or not).
        var username: String?
        var password: String?
        if let at = authority.lastIndex(of: "@") {
            let userinfo = authority[..<at]
            authority = authority[authority.index(after: at)...]
            let colon = userinfo.firstIndex(of: ":")
            func decoded(_ text: Substring) throws -> String {
                guard let text = String(text).removingPercentEncoding else {
                    throw RedisError(.invalidConfiguration, "redis URL has invalid percent-encoding in its credentials")
                }
                return text
            }
            let user = try decoded(userinfo[..<(colon ?? userinfo.endIndex)])
            username = user.isEmpty ? nil : user
            password = try colon.map { try decoded(userinfo[userinfo.index(after: $0)...]) }
        }
        // From here on the URL in messages is the one without its credentials.
        let url = scheme + authority + (slash.map { _ in "/" + path } ?? "")
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
        self.username = username
        self.password = password
        if secure { self.tls = TLSClientConfiguration() }
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

    /// The configuration as a `redis://[user@]host:port/db` URL (`rediss://` with TLS): never with the
    /// password, so it can be logged and shown.
    public var url: String {
        let host = self.host.contains(":") ? "[\(self.host)]" : self.host
        let user =
            username.map { ($0.addingPercentEncoding(withAllowedCharacters: .urlUserAllowed) ?? $0) + "@" } ?? ""
        return "\(tls == nil ? "redis" : "rediss")://\(user)\(host):\(self.port)/\(self.database)"
    }

    /// The name a TLS connection to `host` checks and sends as SNI: `tlsServerName`, else the host when
    /// it is a name; nil for an IP address, whose certificate must then carry the address.
    func tlsName(for host: String) -> String? {
        if let tlsServerName { return tlsServerName }
        var address = in6_addr()
        let isAddress = inet_pton(AF_INET, host, &address) == 1 || inet_pton(AF_INET6, host, &address) == 1
        return isAddress ? nil : host
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

extension RedisConfiguration {
    /// What every new connection sends before any caller's command: AUTH with a password, SELECT for a
    /// database other than 0.
    var handshake: [RedisCommand] {
        var commands: [RedisCommand] = []
        if let password {
            commands.append(username.map { RedisCommand("AUTH", $0, password) } ?? RedisCommand("AUTH", password))
        }
        if database != 0 { commands.append(RedisCommand("SELECT", String(database))) }
        return commands
    }

    /// The `connectionFailed` error `handshake`'s replies call for; nil when they all succeeded.
    func handshakeFailure(_ replies: [RedisReply]) -> RedisError? {
        if password != nil, let message = replies.first?.errorMessage {
            // The server's words (WRONGPASS, NOPERM…), never the password.
            return RedisError(.connectionFailed, "AUTH as \(username ?? "default") failed: \(message.prefix(120))")
        }
        if database != 0, let message = replies.last?.errorMessage {
            return RedisError(.connectionFailed, "SELECT \(database) failed: \(message)")
        }
        return nil
    }
}

extension RedisCommand {
    /// Throws `invalidArgument` for an empty command: Redis silently ignores `*0`, so it would wait for a
    /// reply until the timeout.
    static func refuseEmpty(_ commands: [RedisCommand]) throws {
        if let empty = commands.first(where: { $0.arguments.isEmpty }) {
            throw RedisError(.invalidArgument, "empty redis command: \(empty)")
        }
    }
}
