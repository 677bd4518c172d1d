import AttributionModel
import CryptoPrimitives
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceRuntime

/// Secrets shown once when issued (app keys, ad networks' read-only credentials): Redis keeps only each
/// one's SHA-256, mapped to its owner and to its issue time, in two registry hashes. A secret's id is
/// the first 12 hex digits of that hash, so it can be listed and revoked without being known.
public struct IssuedSecrets: Sendable {
    public let redis: RedisConnection
    /// HASH SHA-256 → owner.
    public let owners: String
    /// HASH SHA-256 → issue time (ms).
    public let issued: String
    /// What the secret starts with, so a leaked one says what it is (`ak_`, `nc_`).
    public let prefix: String

    public static func appKeys(_ redis: RedisConnection) -> IssuedSecrets {
        IssuedSecrets(redis: redis, owners: RegistryKeys.appKeys, issued: RegistryKeys.appKeysIssued, prefix: "ak_")
    }

    public static func networkCredentials(_ redis: RedisConnection) -> IssuedSecrets {
        IssuedSecrets(
            redis: redis, owners: RegistryKeys.networkCredentials, issued: RegistryKeys.networkCredentialsIssued, prefix: "nc_")
    }

    public static func hash(_ secret: String) -> String { Hex.encode(SHA256.hash(data: Data(secret.utf8))) }
    public static func identifier(ofHash hash: String) -> String { String(hash.prefix(12)) }

    /// A new random 32-byte secret for `owner`: the secret (shown once) and its id.
    public func issue(to owner: String, at now: Milliseconds) async throws -> (secret: String, identifier: String) {
        var generator = KernelRandom()
        let secret = prefix + Hex.encode((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let hash = Self.hash(secret)
        _ = try await redis.pipeline([
            RedisCommand("HSET", owners, hash, owner), RedisCommand("HSET", issued, hash, String(now)),
        ])
        return (secret, Self.identifier(ofHash: hash))
    }

    /// `owner`'s live secrets as ids (under `identifierKey`) with their issue times (where recorded),
    /// for a listing.
    public func list(of owner: String, identifierKey: String) async throws -> [[String: Any]] {
        let hashes = try await hashes(of: owner)
        guard !hashes.isEmpty else { return [] }
        let times = try await redis.send(RedisCommand(["HMGET", issued] + hashes)).elements
        return zip(hashes, times).map { hash, time in
            var entry: [String: Any] = [identifierKey: Self.identifier(ofHash: hash)]
            if let at = time.string.flatMap({ Milliseconds($0) }) { entry["issued-at"] = at }
            return entry
        }
    }

    /// Revokes `owner`'s secret with id `identifier`; false when it has none such.
    public func revoke(_ identifier: String, of owner: String) async throws -> Bool {
        guard let hash = try await hashes(of: owner).first(where: { Self.identifier(ofHash: $0) == identifier }) else {
            return false
        }
        _ = try await redis.pipeline([RedisCommand("HDEL", owners, hash), RedisCommand("HDEL", issued, hash)])
        return true
    }

    /// The commands that revoke every secret of `owner` (run with the rest of a deletion).
    public func revokingAll(of owner: String) async throws -> [RedisCommand] {
        let hashes = try await hashes(of: owner)
        guard !hashes.isEmpty else { return [] }
        return [RedisCommand(["HDEL", owners] + hashes), RedisCommand(["HDEL", issued] + hashes)]
    }

    /// Whose `secret` it is; nil when it was never issued or is revoked.
    public func owner(of secret: String) async throws -> String? {
        try await redis.send(RedisCommand("HGET", owners, Self.hash(secret))).string
    }

    /// The hashes of `owner`'s live secrets, sorted (a walk of the whole hash: an admin call, not an event's).
    public func hashes(of owner: String) async throws -> [String] {
        var found: [String] = []
        var cursor = "0"
        repeat {
            let reply = try await redis.send(RedisCommand("HSCAN", owners, cursor, "COUNT", "1000")).elements
            cursor = reply.first?.string ?? "0"
            let pairs = (reply.dropFirst().first?.elements ?? []).compactMap(\.string)
            for index in stride(from: 0, to: pairs.count - 1, by: 2) where pairs[index + 1] == owner {
                found.append(pairs[index])
            }
        } while cursor != "0"
        return found.sorted()
    }
}
