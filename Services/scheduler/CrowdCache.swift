import AttributionModel
import Foundation
import Synchronization

/// The crowd counters this scheduler read (each the sum of every partition's shard), kept for
/// `maxAge` and advanced by what this process itself commits.
///
/// Summing a crowd costs one read per partition; a batch needs six crowds per conversion. Within
/// `maxAge` a crowd is served from here: exact while this process is the only scheduler (its own
/// increments are applied once committed, by every consumer loop); with several replicas, another replica's conversions show
/// up to `maxAge` late. A count can only lag, never lead, so a tier can only come out lower (less
/// data in the postback), never higher: the privacy thresholds hold either way.
final class CrowdCache: Sendable {
    struct Entry {
        var buckets: [Int64: Int]
        var readAt: ContinuousClock.Instant
    }

    let maxAge: Duration
    private let entries = Mutex<[Crowd: Entry]>([:])
    /// Bounds the memory a long-running scheduler spends: past it, the oldest reads go first.
    private let capacity = 100_000

    init(maxAge: Duration) { self.maxAge = maxAge }

    /// The crowds among `crowds` that must be read (absent or older than `maxAge`), and with `orBelow`
    /// those whose cached count, every day's, has not reached it.
    func stale(_ crowds: [Crowd], orBelow threshold: Int? = nil) -> [Crowd] {
        let now = ContinuousClock.now
        return entries.withLock { entries in
            crowds.filter { crowd in
                guard let entry = entries[crowd], now - entry.readAt < maxAge else { return true }
                return threshold.map { entry.buckets.values.reduce(0, +) + 1 < $0 } ?? false
            }
        }
    }

    /// Counts just read from Redis.
    func store(_ read: [Crowd: [Int64: Int]]) {
        let now = ContinuousClock.now
        entries.withLock { entries in
            if entries.count + read.count > capacity {
                let expired = entries.filter { now - $0.value.readAt >= maxAge }.map(\.key)
                for crowd in expired { entries[crowd] = nil }
                if entries.count + read.count > capacity { entries.removeAll() }
            }
            for (crowd, buckets) in read { entries[crowd] = Entry(buckets: buckets, readAt: now) }
        }
    }

    /// The cached counts of `crowds` (those present).
    func counts(_ crowds: [Crowd]) -> [Crowd: [Int64: Int]] {
        entries.withLock { entries in
            var counts: [Crowd: [Int64: Int]] = [:]
            for crowd in crowds { if let entry = entries[crowd] { counts[crowd] = entry.buckets } }
            return counts
        }
    }

    /// This process's committed increments, decided at `decidedAt` (before their transaction was sent):
    /// applied to the crowds it holds that were read before then. A crowd read since (by another consumer
    /// loop of this process, over its own connection) may already include them, so it is dropped and
    /// read again rather than counted twice.
    func apply(_ increments: [CrowdIncrement], decidedAt: ContinuousClock.Instant) {
        entries.withLock { entries in
            for increment in increments {
                for crowd in increment.crowds {
                    guard let entry = entries[crowd] else { continue }
                    entries[crowd] =
                        entry.readAt <= decidedAt
                        ? Entry(buckets: increment.applied(to: entry.buckets), readAt: entry.readAt) : nil
                }
            }
        }
    }
}

/// What one attempt at a batch decided to add to the crowds, and the counters' upkeep it wrote,
/// handed from `decide` to `committed`.
final class PendingIncrements: Sendable {
    let increments = Mutex<[CrowdIncrement]>([])
    /// When the attempt decided: before its transaction was sent.
    let decidedAt = Mutex<ContinuousClock.Instant>(.now)
    let upkeep = Mutex<[String: CrowdUpkeep]>([:])
}

/// What this scheduler last did to each crowd counter key besides counting (`CrowdUpkeep`), as
/// committed. Another replica keeps its own: each trims and extends on its own schedule, which only
/// repeats work. A counter deleted behind the scheduler's back gets its expiry again within a quarter
/// of its lifetime, when this memory says to extend it.
final class CrowdUpkeeps: Sendable {
    private let entries = Mutex<[String: CrowdUpkeep]>([:])
    /// Bounds the memory: past it, everything is forgotten (the next increments trim and extend again).
    private let capacity = 200_000

    subscript(key: String) -> CrowdUpkeep {
        entries.withLock { $0[key] ?? CrowdUpkeep() }
    }

    func committed(_ upkeep: [String: CrowdUpkeep]) {
        entries.withLock { entries in
            if entries.count + upkeep.count > capacity { entries.removeAll() }
            entries.merge(upkeep) { $1 }
        }
    }
}
