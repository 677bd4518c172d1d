import Synchronization

/// A Lua script run atomically by Redis, by its SHA-1 (EVALSHA).
///
/// The SHA-1 comes from one SCRIPT LOAD. A node whose script cache lacks the script (restart,
/// failover, SCRIPT FLUSH, or simply another node of a Redis Cluster than the one that loaded it)
/// answers NOSCRIPT; that call is then sent once more as EVAL with the source, which also caches the
/// script on that node. So no call fails for want of a load, and nothing is loaded on every node up front.
public final class RedisScript: Sendable {
    public let source: String
    private let sha = Mutex<String?>(nil)

    public init(_ source: String) { self.source = source }

    /// One call's keys and binary-safe arguments.
    public struct Call: Sendable {
        public var keys: [String]
        public var arguments: [[UInt8]]
        public init(keys: [String], arguments: [[UInt8]]) {
            self.keys = keys
            self.arguments = arguments
        }
    }

    /// Runs the script once; an error reply is thrown.
    public func run(keys: [String], arguments: [[UInt8]], on connection: RedisConnection) async throws -> RedisReply {
        let reply = try await self.runAll([Call(keys: keys, arguments: arguments)], on: connection)[0]
        if let message = reply.errorMessage { throw RedisError(.server, message) }
        return reply
    }

    /// Runs the script once, then `following` in the same round trip (on Redis Cluster, on the same
    /// node: `WAIT` after a write); the script's error reply is thrown, the others are returned.
    public func run(
        keys: [String], arguments: [[UInt8]], followedBy following: [RedisCommand], on connection: RedisConnection
    ) async throws -> (RedisReply, [RedisReply]) {
        let call = Call(keys: keys, arguments: arguments)
        let sha = try await self.loadedSHA(on: connection)
        var replies = try await connection.pipeline([self.command("EVALSHA", sha, call)] + following)
        if replies[0].errorMessage?.hasPrefix("NOSCRIPT") == true {
            replies = try await connection.pipeline([self.command("EVAL", self.source, call)] + following)
        }
        if let message = replies[0].errorMessage { throw RedisError(.server, message) }
        return (replies[0], Array(replies.dropFirst()))
    }

    /// Runs every call in one pipeline (the transport may split it by node); one reply per call, error
    /// replies included.
    public func runAll(_ calls: [Call], on connection: RedisConnection) async throws -> [RedisReply] {
        guard !calls.isEmpty else { return [] }
        let sha = try await self.loadedSHA(on: connection)
        var replies = try await connection.pipeline(calls.map { self.command("EVALSHA", sha, $0) })
        let missing = replies.indices.filter { replies[$0].errorMessage?.hasPrefix("NOSCRIPT") == true }
        if !missing.isEmpty {
            let retried = try await connection.pipeline(missing.map { self.command("EVAL", self.source, calls[$0]) })
            for (index, reply) in zip(missing, retried) { replies[index] = reply }
        }
        return replies
    }

    /// The command that runs `call`: EVALSHA by `sha` (from `loaded(on:)`), or EVAL with the source when
    /// `sha` is nil (after NOSCRIPT), for callers that mix script calls with other commands in one pipeline.
    public func command(for call: Call, sha: String?) -> RedisCommand {
        if let sha { return self.command("EVALSHA", sha, call) }
        return self.command("EVAL", self.source, call)
    }

    /// The script's SHA-1, loaded once (SCRIPT LOAD on first use).
    public func loaded(on connection: RedisConnection) async throws -> String {
        try await self.loadedSHA(on: connection)
    }

    /// The script's SHA-1, loaded once through `pipeline` (a connection of any kind).
    public func loaded(via pipeline: ([RedisCommand]) async throws -> [RedisReply]) async throws -> String {
        if let sha = self.sha.withLock({ $0 }) { return sha }
        return try self.remember(await pipeline([self.load])[0])
    }

    private func command(_ name: String, _ script: String, _ call: Call) -> RedisCommand {
        RedisCommand(
            bytes: [Array(name.utf8), Array(script.utf8), Array(String(call.keys.count).utf8)] + call.keys.map { Array($0.utf8) }
                + call.arguments)
    }

    private func loadedSHA(on connection: RedisConnection) async throws -> String {
        if let sha = self.sha.withLock({ $0 }) { return sha }
        return try self.remember(await connection.pipeline([self.load])[0])
    }

    private var load: RedisCommand { RedisCommand("SCRIPT", "LOAD", self.source) }

    /// SCRIPT LOAD's answer, kept for every later call; an error reply is thrown.
    private func remember(_ reply: RedisReply) throws -> String {
        if let message = reply.errorMessage { throw RedisError(.server, message) }
        guard let sha = reply.string else { throw RedisError(.unexpectedReply, "SCRIPT LOAD returned no SHA-1") }
        self.sha.withLock { $0 = sha }
        return sha
    }
}
