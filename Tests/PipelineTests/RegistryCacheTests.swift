import CryptoPrimitives
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceRuntime
import TestSupport
import Testing

extension PipelineSuites {
    /// The stages' registry cache on a real redis-server: held entries are served without a read while
    /// the registry's version stands, dropped when it moves, and absent fields are never held.
    @Suite("Registry cache")
    struct RegistryCacheTests {
        let hash = RegistryKeys.adNetworks

        static func words(_ commands: [RedisCommand]) -> [[String]] {
            commands.map { $0.arguments.map { String(decoding: $0, as: UTF8.self) } }
        }

        static func names(_ commands: [RedisCommand]) -> [String] { words(commands).map { $0.first ?? "" } }

        /// Runs one lookup the way a stage worker does; nil when the cache asked for a second read.
        func read(_ cache: RegistryCache, _ fields: [String], on redis: RedisConnection) async throws -> (
            values: [String?], commands: [RedisCommand]
        )? {
            let reads = RegistryReads(cache, [.init(hash, fields)])
            let commands = reads.commands()
            guard reads.resolve(try await redis.pipeline(commands)[...]) else { return nil }
            return (reads.replies[0].elements.map(\.string), commands)
        }

        /// A fresh redis-server whose registry holds `a` = 1 (written with its bump), for `body`.
        func withRegistry(_ body: (RedisConnection) async throws -> Void) async throws {
            let server = try await RedisServer.start()
            defer { server.stop() }
            let redis = server.connect()
            try await write("a", "1", on: redis)
            try await body(redis)
        }

        func write(_ field: String, _ value: String, on redis: RedisConnection, bump: Bool = true) async throws {
            _ = try await redis.pipeline([RedisCommand("HSET", hash, field, value)] + (bump ? [RegistryCache.bump] : []))
        }

        @Test func heldEntriesAreServedUntilTheVersionMoves() async throws {
            try await withRegistry { redis in
                let cache = RegistryCache(maxAge: .seconds(60))

                let first = try #require(try await read(cache, ["a", "b"], on: redis))
                #expect(first.values == ["1", nil])
                #expect(Self.names(first.commands) == ["GET", "HMGET"])
                // "a" is held; "b" is absent, so it is read again (a registration a moment later is found at once).
                let second = try #require(try await read(cache, ["a", "b"], on: redis))
                #expect(second.values == ["1", nil])
                #expect(Self.words(second.commands) == [["GET", RegistryKeys.version], ["HMGET", hash, "b"]])
                let third = try #require(try await read(cache, ["a"], on: redis))
                #expect(Self.names(third.commands) == ["GET"], "everything held: only the version is read")

                // A write with its bump: the batch that used the held "a" reads again, then sees the new value.
                try await write("a", "2", on: redis)
                #expect(try await read(cache, ["a"], on: redis) == nil)
                let after = try #require(try await read(cache, ["a"], on: redis))
                #expect(after.values == ["2"])
                #expect(Self.names(after.commands) == ["GET", "HMGET"])

                // A newly registered field needs no bump to be found.
                try await write("b", "3", on: redis, bump: false)
                #expect(try #require(try await read(cache, ["a", "b"], on: redis)).values == ["2", "3"])
            }
        }

        /// A batch that read nothing held is current even when the version moved: its values were read
        /// after the version they are kept under.
        @Test func aBatchReadingEverythingNeverReadsTwice() async throws {
            try await withRegistry { redis in
                let cache = RegistryCache(maxAge: .seconds(60))
                _ = try #require(try await read(cache, ["a"], on: redis))
                try await write("c", "9", on: redis)
                let fresh = try #require(try await read(cache, ["c"], on: redis))
                #expect(fresh.values == ["9"])
                // The move dropped "a": read, not served stale.
                #expect(Self.names(try #require(try await read(cache, ["a"], on: redis)).commands) == ["GET", "HMGET"])
            }
        }

        /// A change made by hand (no bump) is seen once the entry is older than `maxAge`; 0 reads every time.
        @Test func maxAgeBoundsAWriteWithoutItsBump() async throws {
            try await withRegistry { redis in
                let cache = RegistryCache(maxAge: .milliseconds(200))
                _ = try #require(try await read(cache, ["a"], on: redis))
                try await write("a", "2", on: redis, bump: false)
                #expect(try #require(try await read(cache, ["a"], on: redis)).values == ["1"], "held, by design")
                try await Task.sleep(for: .milliseconds(250))
                #expect(try #require(try await read(cache, ["a"], on: redis)).values == ["2"])

                let never = RegistryCache(maxAge: .zero)
                _ = try #require(try await read(never, ["a"], on: redis))
                #expect(Self.names(try #require(try await read(never, ["a"], on: redis)).commands) == ["GET", "HMGET"])
            }
        }

        /// End to end: an ad network re-registered with a new key while the verifier holds the old
        /// registration. The next impression, signed with the new key, is verified, not refused.
        @Test func aReRegisteredNetworkIsSeenByTheNextBatch() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            let pipeline = try PipelineProcesses(redis: redis, timeScale: 1, only: ["ingest", "verifier"], inProcess: true)
            defer { pipeline.stop() }
            let http = HTTPTestClient()
            try #require(try await http.waitUntilUp("\(pipeline.ingestURL)/health"), "ingest started\n\(pipeline.logs())")
            func register(_ key: P256.Signing.PrivateKey) async throws {
                let reply = try await http.send(
                    "PUT", "\(pipeline.adminURL)/v1/admin/ad-networks/\(HostileInputTests.network)",
                    json: ["public-key": key.publicKey.pemRepresentation, "postback-url": "https://example.com/p"],
                    token: pipeline.adminToken)
                try #require(reply.status == 200, "\(reply.json)")
            }
            let old = P256.Signing.PrivateKey()
            try await register(old)
            for (path, json) in [
                ("publisher-apps/\(HostileInputTests.publisher)", ["AdNetworkIdentifiers": [HostileInputTests.network]]),
                ("advertised-apps/\(HostileInputTests.app)", [:] as [String: Any]),
            ] {
                let reply = try await http.send(
                    "PUT", "\(pipeline.adminURL)/v1/admin/\(path)", json: json, token: pipeline.adminToken)
                try #require(reply.status == 200, "\(path): \(reply.json)")
            }
            let connection = redis.connect()
            func send(signedWith key: P256.Signing.PrivateKey, expectVerified count: Int) async throws {
                let jws = HostileInputTests.jws(
                    header: #"{"alg":"ES256","kid":"\#(HostileInputTests.network)"}"#, payload: HostileInputTests.payload(),
                    key: key)
                let reply = try await http.send(
                    HTTPClientRequestBuilder(
                        method: "POST", url: "\(pipeline.ingestURL)/v1/impressions", body: HostileInputTests.impressionBody(jws)))
                try #require(reply.status == 202, "\(reply.json)")
                let decided = try await eventually(timeout: .seconds(20)) {
                    try await streamLength(StreamNames.verified, on: connection)
                        + streamLength(StreamNames.rejected, on: connection)
                        >= count
                }
                try #require(decided, "decided\n\(pipeline.logs())")
            }
            try await send(signedWith: old, expectVerified: 1)
            let new = P256.Signing.PrivateKey()
            try await register(new)
            try await send(signedWith: new, expectVerified: 2)
            let rejected = try await streamRecords(StreamNames.rejected, on: connection).compactMap(\.message)
            #expect(try await streamLength(StreamNames.verified, on: connection) == 2, "\(rejected)")
        }
    }
}
