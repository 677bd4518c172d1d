import AttributionModel
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceRuntime
import Synchronization
import TestSupport
import Testing

@testable import SchedulerService

/// The scheduler's crowd ranking script on a real redis-server: each conversion counted once and given
/// its exact size, again the same size when its batch is done again, for an hour or two.
@Suite("Crowd ranks")
struct CrowdRanksTests {
    static let crowd: Crowd = .advertisedApp(5_005)
    static let time: Milliseconds = 1_764_000_000_000
    static var today: Int64 { CrowdDayBuckets.day(of: time, policy: .realTime) }

    static func request(_ ids: [String], at time: Milliseconds = Self.time) -> CrowdRanking.Request {
        CrowdRanking.Request(
            crowd: crowd, conversions: ids.map { CrowdRanking.Member(conversionIdentifier: $0, conversionTime: time) })
    }

    static func ranks(_ ranked: [String: [Crowd: Int]], _ ids: [String]) -> [Int?] {
        ids.map { ranked[$0]?[crowd] }
    }

    @Test func countsEachConversionOnceAndAnswersItsRankAgain() async throws {
        let redis = try await RedisServer.start()
        defer { redis.stop() }
        let connection = redis.connect()
        let wall = Mutex<Milliseconds>(1_800_000_000_000)
        let ranks = CrowdRanks(
            connection: connection, partitioning: Partitioning(), shardsCrowds: false, policy: .realTime,
            wallClock: { wall.withLock { $0 } })
        let key = StageKeys.crowd(Self.crowd, shard: nil)
        _ = try await connection.send(RedisCommand("HSET", key, String(Self.today), "7"))

        #expect(Self.ranks(try await ranks.rank([Self.request(["a", "b"])], otherShards: [:]), ["a", "b"]) == [8, 9])
        // The same batch done again (a WATCH conflict, a claim) with one more: b keeps its rank, c is counted.
        #expect(Self.ranks(try await ranks.rank([Self.request(["b", "c"])], otherShards: [:]), ["b", "c"]) == [9, 10])
        #expect(try await connection.send(RedisCommand("HGET", key, String(Self.today))).int == 10)
        // A conversion of 40 days ago is counted on its own day and ranked among that day's period only.
        let old = Self.time - 40 * 86_400_000
        #expect(Self.ranks(try await ranks.rank([Self.request(["old"], at: old)], otherShards: [:]), ["old"]) == [1])

        // Within the next hour the ranks still hold; two hours on they are gone and deleted.
        wall.withLock { $0 += 3_600_000 }
        #expect(Self.ranks(try await ranks.rank([Self.request(["a"])], otherShards: [:]), ["a"]) == [8])
        wall.withLock { $0 += 3_600_000 }
        #expect(Self.ranks(try await ranks.rank([Self.request(["d"])], otherShards: [:]), ["d"]) == [11])
        let fields = try await connection.send(RedisCommand("HKEYS", key)).elements.compactMap(\.string)
        #expect(fields.filter { $0.hasPrefix("c:") } == ["c:d"], "ranks older than an hour or two are deleted: \(fields)")
        #expect(try await connection.send(RedisCommand("PTTL", key)).int ?? 0 > 0, "the counter expires")
    }

    /// On Redis Cluster a crowd is ranked in the first partition's shard; the other shards' counts, as the
    /// batch read them, are added to each conversion's rank.
    @Test func addsTheOtherShardsOnACluster() async throws {
        let redis = try await RedisServer.start()
        defer { redis.stop() }
        let connection = redis.connect()
        let ranks = CrowdRanks(
            connection: connection, partitioning: Partitioning(), shardsCrowds: true, policy: .realTime,
            wallClock: { 1_800_000_000_000 })
        let ranked = try await ranks.rank(
            [Self.request(["a", "b"])], otherShards: [Self.crowd: [Self.today: 40, Self.today - 31: 5]])
        #expect(Self.ranks(ranked, ["a", "b"]) == [41, 42])
        let home = StageKeys.crowd(Self.crowd, shard: ranks.home)
        #expect(try await connection.send(RedisCommand("HGET", home, String(Self.today))).int == 2)
    }
}
