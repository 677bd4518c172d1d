import AttributionModel
import PipelineCatalog
import RedisStreams
import ServiceRuntime

/// Counts a batch's new conversions in the crowds `CrowdRanking` names, in Redis, before the batch's
/// transaction: one script run for the whole batch, which counts each conversion in each of those
/// crowds and answers each crowd's size just after, so every conversion's tier includes every
/// conversion counted before it, whichever consumer loop or replica counted it.
///
/// One run for all of a batch's crowds, not one per crowd: runs of different batches would otherwise
/// interleave crowd by crowd, one batch first in one crowd and second in another, and a tier, the
/// smallest of its crowds' tiers, would come out lower than any one order of the conversions gives.
/// So the crowds' counters share a slot: on one Redis they are the crowds' counters; on Redis Cluster
/// the shards of one partition (`home`), with the other shards' counts (read by the batch, and only
/// ever raised by conversions whose crowd had reached the top threshold) added.
///
/// Counting happens outside the transaction that writes the conversion's plan (on Redis Cluster the
/// crowds live in another slot), so the script keeps each rank it gave in the counter for an hour or
/// two: a batch redone after a WATCH conflict, a crash or a claim finds its conversions' ranks there
/// and is not counted twice.
struct CrowdRanks: Sendable {
    /// Not a worker's connection: its WATCH must not mix with these writes (as the verifier's claims).
    let connection: RedisConnection
    let partitioning: Partitioning
    let shardsCrowds: Bool
    let policy: TimePolicy
    /// Wall-clock milliseconds, for the ranks' hours (a redo comes within minutes of wall time,
    /// whatever the time scale).
    let wallClock: @Sendable () -> Milliseconds

    /// An hour in milliseconds: a rank is kept for the hour it was given in and the next.
    static let hour: Milliseconds = 3_600_000

    /// The partition whose shards count every crowd below the top threshold on Redis Cluster: the
    /// first. Such crowds get few conversions, and one batch's are counted in one script run.
    var home: Partition { partitioning[0] }

    /// The ranks of every request's conversions (`CrowdCounts.ranked`). `otherShards` holds, per crowd
    /// on Redis Cluster, the sum of the shards other than `home`'s as the batch read them. Throws
    /// when Redis fails: nothing was decided, and the batch is tried again.
    func rank(_ requests: [CrowdRanking.Request], otherShards: [Crowd: [Int64: Int]]) async throws -> [String: [Crowd: Int]] {
        guard !requests.isEmpty else { return [:] }
        var arguments = [
            String(CrowdDayBuckets.days), String(CrowdDayBuckets.keepFor(policy: policy)), String(wallClock() / Self.hour),
        ]
        for request in requests {
            arguments.append(String(request.conversions.count))
            for member in request.conversions {
                let others = CrowdDayBuckets.count(otherShards[request.crowd] ?? [:], at: member.conversionTime, policy: policy)
                arguments += [
                    member.conversionIdentifier, String(CrowdDayBuckets.day(of: member.conversionTime, policy: policy)),
                    String(others),
                ]
            }
        }
        let keys = requests.map { StageKeys.crowd($0.crowd, shard: shardsCrowds ? home : nil) }
        let reply: RedisReply
        do {
            reply = try await Self.script.run(keys: keys, arguments: arguments.map { Array($0.utf8) }, on: connection)
        } catch let error as RedisError where error.code == .server {
            throw RedisError(.server, "counting crowds failed: \(error)")
        }
        var ranks: [[Int]] = []
        for (request, counted) in zip(requests, reply.elements) {
            let values = counted.elements.compactMap(\.int).map(Int.init)
            guard values.count == request.conversions.count else {
                throw RedisError(
                    .unexpectedReply, "counting a crowd answered \(values.count) ranks for \(request.conversions.count)")
            }
            ranks.append(values)
        }
        guard ranks.count == requests.count else {
            throw RedisError(.unexpectedReply, "counting crowds answered \(ranks.count) crowds of \(requests.count)")
        }
        return CrowdRanking.ranked(requests, ranks: ranks)
    }

    /// KEYS: the crowds' counters, each holding day → conversions that day and, for each conversion the
    /// script ranked, `c:<conversion>` → `<rank>:<hour>`. ARGV: the trailing period in days, how long a
    /// counter lives after its last conversion, the current wall-clock hour, then per counter the
    /// number of its conversions and per conversion its id, its day and the other shards' count.
    /// A conversion ranked this hour or the one before answers its rank again; a new one is counted on
    /// its day and ranked with the trailing period's count as of that day. Older ranks, and days that
    /// fell out of the newest conversion's period (as the scheduler's own upkeep does, `CrowdUpkeep`),
    /// are deleted. One read and at most three writes a counter, however many conversions: the ranks
    /// live in the counter, not in keys of their own. Answers one list of ranks per counter.
    static let script = RedisScript(
        """
        local days, hour = tonumber(ARGV[1]), tonumber(ARGV[3])
        local answer = {}
        local at = 4
        for k = 1, #KEYS do
          local key = KEYS[k]
          local buckets, ranked, deletes = {}, {}, {}
          local flat = redis.call('HGETALL', key)
          for i = 1, #flat, 2 do
            local field, value = flat[i], flat[i + 1]
            if string.sub(field, 1, 2) == 'c:' then
              local rank, given = string.match(value, '^(%d+):(%d+)$')
              if rank and tonumber(given) >= hour - 1 then
                ranked[string.sub(field, 3)] = tonumber(rank)
              else
                deletes[#deletes + 1] = field
              end
            elseif tonumber(field) then
              buckets[tonumber(field)] = tonumber(value)
            end
          end
          local ranks, writes, counted, newest = {}, {}, {}, nil
          local members = tonumber(ARGV[at])
          at = at + 1
          for _ = 1, members do
            local id, day = ARGV[at], tonumber(ARGV[at + 1])
            local rank = ranked[id]
            if not rank then
              buckets[day] = (buckets[day] or 0) + 1
              counted[day] = ARGV[at + 1]
              rank = tonumber(ARGV[at + 2])
              for d, n in pairs(buckets) do
                if d > day - days and d <= day then rank = rank + n end
              end
              ranked[id] = rank
              writes[#writes + 1] = 'c:' .. id
              writes[#writes + 1] = string.format('%d:%d', rank, hour)
            end
            ranks[#ranks + 1] = rank
            if newest == nil or day > newest then newest = day end
            at = at + 3
          end
          for d, name in pairs(counted) do
            writes[#writes + 1] = name
            writes[#writes + 1] = string.format('%d', buckets[d])
          end
          for i = 1, #flat, 2 do
            local d = tonumber(flat[i])
            if d and newest and d <= newest - days then deletes[#deletes + 1] = flat[i] end
          end
          if #deletes > 0 then redis.call('HDEL', key, unpack(deletes)) end
          if #writes > 0 then redis.call('HSET', key, unpack(writes)) end
          redis.call('PEXPIRE', key, ARGV[2])
          answer[k] = ranks
        end
        return answer
        """)
}
