import AttributionModel
import RedisStreams
import ServiceRuntime

/// Counts a batch's new conversions in the crowds `CrowdRanking` names, in Redis, before the batch's
/// transaction: one script run per crowd, which counts each conversion and answers the crowd's size
/// just after, so every conversion's tier includes every conversion counted before it, whichever
/// consumer loop or replica counted it.
///
/// Counting happens outside the transaction that writes the conversion's plan (on Redis Cluster the
/// crowd lives in another slot), so the script keeps each rank it gave for an hour or two
/// (`StageKeys.crowdRanks`): a batch redone after a WATCH conflict, a crash or a claim finds its
/// conversions' ranks there and is not counted twice. A crowd is counted in one key: on one Redis its
/// counter; on Redis Cluster the shard of its home partition, with the other shards' counts (read by
/// the batch, and only ever raised by conversions whose crowd had reached the top threshold) added.
struct CrowdRanks: Sendable {
    /// Not a worker's connection: its WATCH must not mix with these writes (as the verifier's claims).
    let connection: RedisConnection
    let partitioning: Partitioning
    let shardsCrowds: Bool
    let policy: TimePolicy
    /// Wall-clock milliseconds, for the rank keys' hours (a redo comes within minutes of wall time,
    /// whatever the time scale).
    let wallClock: @Sendable () -> Milliseconds

    /// An hour in milliseconds: the rank keys' bucket. A key lives two of them.
    static let hour: Milliseconds = 3_600_000

    /// The partition whose shard counts `crowd` on Redis Cluster.
    func home(of crowd: Crowd) -> Partition {
        partitioning.of(key: StageKeys.crowd(crowd, shard: nil))
    }

    /// The ranks of every request's conversions (`CrowdCounts.ranked`). `otherShards` holds, per crowd
    /// on Redis Cluster, the sum of the shards other than its home's as the batch read them. Throws
    /// when Redis fails: nothing was decided, and the batch is tried again.
    func rank(_ requests: [CrowdRanking.Request], otherShards: [Crowd: [Int64: Int]]) async throws -> [String: [Crowd: Int]] {
        guard !requests.isEmpty else { return [:] }
        let hour = wallClock() / Self.hour
        let keepCounter = policy.milliseconds(CrowdTierThresholds.trailingPeriod) * 2
        let calls = requests.map { request -> RedisScript.Call in
            let shard = shardsCrowds ? home(of: request.crowd) : nil
            var arguments = [String(CrowdDayBuckets.days), String(keepCounter), String(Self.hour * 2)]
            for member in request.conversions {
                let others = CrowdDayBuckets.count(otherShards[request.crowd] ?? [:], at: member.conversionTime, policy: policy)
                arguments += [
                    member.conversionIdentifier, String(CrowdDayBuckets.day(of: member.conversionTime, policy: policy)),
                    String(others),
                ]
            }
            return RedisScript.Call(
                keys: [
                    StageKeys.crowd(request.crowd, shard: shard), StageKeys.crowdRanks(request.crowd, shard: shard, hour: hour),
                    StageKeys.crowdRanks(request.crowd, shard: shard, hour: hour - 1),
                ], arguments: arguments.map { Array($0.utf8) })
        }
        let replies = try await Self.script.runAll(calls, on: connection)
        var ranks: [[Int]] = []
        for (request, reply) in zip(requests, replies) {
            if let message = reply.errorMessage { throw RedisError(.server, "counting a crowd failed: \(message)") }
            let values = reply.elements.compactMap(\.int).map(Int.init)
            guard values.count == request.conversions.count else {
                throw RedisError(.unexpectedReply, "counting a crowd answered \(values.count) ranks for \(request.conversions.count)")
            }
            ranks.append(values)
        }
        return CrowdRanking.ranked(requests, ranks: ranks)
    }

    /// KEYS: the crowd's counter (day → conversions), this hour's ranks, the previous hour's.
    /// ARGV: the trailing period in days, how long the counter lives after its last conversion, how
    /// long a rank key lives, then per conversion its id, its day and the other shards' count.
    /// A conversion already ranked answers its rank again; a new one is counted on its day and ranked
    /// with the trailing period's count as of that day. Days that fell out of the newest conversion's
    /// period are deleted, as the scheduler's own upkeep does (`CrowdUpkeep`).
    static let script = RedisScript(
        """
        local days = tonumber(ARGV[1])
        local buckets = {}
        local flat = redis.call('HGETALL', KEYS[1])
        for i = 1, #flat, 2 do buckets[tonumber(flat[i])] = tonumber(flat[i + 1]) end
        local ranks = {}
        local newest = nil
        for i = 4, #ARGV, 3 do
          local id, day = ARGV[i], tonumber(ARGV[i + 1])
          local rank = redis.call('HGET', KEYS[2], id) or redis.call('HGET', KEYS[3], id)
          if not rank then
            redis.call('HINCRBY', KEYS[1], ARGV[i + 1], 1)
            buckets[day] = (buckets[day] or 0) + 1
            rank = tonumber(ARGV[i + 2])
            for d, n in pairs(buckets) do
              if d > day - days and d <= day then rank = rank + n end
            end
            redis.call('HSET', KEYS[2], id, rank)
          end
          ranks[#ranks + 1] = tonumber(rank)
          if newest == nil or day > newest then newest = day end
        end
        for d, _ in pairs(buckets) do
          if d <= newest - days then redis.call('HDEL', KEYS[1], tostring(d)) end
        end
        redis.call('PEXPIRE', KEYS[1], ARGV[2])
        redis.call('PEXPIRE', KEYS[2], ARGV[3])
        return ranks
        """)
}
