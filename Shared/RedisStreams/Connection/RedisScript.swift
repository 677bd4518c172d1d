import Synchronization

/// A Lua script run atomically by Redis: loaded once (SCRIPT LOAD), then run by its SHA-1; when the
/// server's script cache was emptied (restart, failover, SCRIPT FLUSH) it is loaded again.
public final class RedisScript: Sendable {
    public let source: String
    private let sha = Mutex<String?>(nil)

    public init(_ source: String) { self.source = source }

    /// Runs the script with binary-safe keys and arguments; an error reply is thrown.
    public func run(keys: [String], arguments: [[UInt8]], on connection: RedisConnection) async throws -> RedisReply {
        let tail = [Array(String(keys.count).utf8)] + keys.map { Array($0.utf8) } + arguments
        for _ in 0..<2 {
            let sha = try await self.loadedSHA(on: connection)
            do {
                return try await connection.send(RedisCommand(bytes: [Array("EVALSHA".utf8), Array(sha.utf8)] + tail))
            } catch let error as RedisError where error.serverErrorPrefix == "NOSCRIPT" {
                self.sha.withLock { $0 = nil }
            }
        }
        throw RedisError(.unexpectedReply, "script could not be loaded")
    }

    private func loadedSHA(on connection: RedisConnection) async throws -> String {
        if let sha = self.sha.withLock({ $0 }) { return sha }
        guard let sha = try await connection.send(RedisCommand("SCRIPT", "LOAD", self.source)).string else {
            throw RedisError(.unexpectedReply, "SCRIPT LOAD returned no SHA-1")
        }
        self.sha.withLock { $0 = sha }
        return sha
    }
}
