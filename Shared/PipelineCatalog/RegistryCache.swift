import Foundation
import RedisStreams
import Synchronization

/// The registry entries a stage read (ad networks, apps, current schemas), kept between batches and
/// invalidated by the registry's version.
///
/// Every write to a registry hash the stages read is followed by `INCR` of `RegistryKeys.version`
/// (`RegistryCache.bump`). A batch's lookups start with `GET` of that version, then read only the
/// fields not held here, in the same pipeline. If the version is the one the held entries were read
/// under, nothing was written since, so they are exact as of this batch's lookups, as a fresh read
/// would be. If it moved, everything held is dropped; a batch that used held entries is read again
/// (`resolve` answers nil). Values read after the `GET` are at least as new as the version it
/// returned, so they are kept under it.
///
/// Absent fields are never held: a network registered a moment ago is found by the next batch
/// without waiting for anything. `maxAge` bounds how long an entry is trusted without a re-read, for
/// a write that skipped the version (an operator editing Redis by hand).
public final class RegistryCache: Sendable {
    /// One hash's fields a batch needs.
    public struct Want: Sendable, Hashable {
        public let hash: String
        public let fields: [String]
        public init(_ hash: String, _ fields: [String]) {
            self.hash = hash
            self.fields = fields
        }
    }

    /// One batch's lookups: `commands` (the version, then an HMGET per hash with fields to read) and
    /// what the cache already held when they were planned.
    public struct Lookup: Sendable {
        public let wants: [Want]
        public let commands: [RedisCommand]
        let held: [String: [String: [UInt8]]]
        let fetched: [Want]
        let version: Int64?
    }

    struct Entry {
        var value: [UInt8]
        var readAt: ContinuousClock.Instant
    }

    struct State {
        var version: Int64?
        var entries: [String: [String: Entry]] = [:]
        var count = 0
    }

    public let maxAge: Duration
    private let state = Mutex(State())
    /// Bounds a long-running stage's memory: past it, everything is read again.
    private let capacity: Int

    public init(maxAge: Duration, capacity: Int = 100_000) {
        self.maxAge = maxAge
        self.capacity = capacity
    }

    /// The registry writes' companion: the version every cache checks (after the write, never before).
    public static let bump = RedisCommand("INCR", RegistryKeys.version)

    /// Plans a batch's lookups for `wants` (hashes with no fields are skipped).
    public func lookup(_ wants: [Want]) -> Lookup {
        let now = ContinuousClock.now
        return state.withLock { state in
            var held: [String: [String: [UInt8]]] = [:]
            var fetched: [Want] = []
            for want in wants where !want.fields.isEmpty {
                var missing: [String] = []
                for field in want.fields {
                    if let entry = state.entries[want.hash]?[field], now - entry.readAt < maxAge {
                        held[want.hash, default: [:]][field] = entry.value
                    } else {
                        missing.append(field)
                    }
                }
                if !missing.isEmpty { fetched.append(Want(want.hash, missing)) }
            }
            // Nothing wanted, nothing read; otherwise the version first, even when everything is held.
            let commands =
                wants.allSatisfy(\.fields.isEmpty)
                ? [] : [RedisCommand("GET", RegistryKeys.version)] + fetched.map { RedisCommand(["HMGET", $0.hash] + $0.fields) }
            return Lookup(wants: wants, commands: commands, held: held, fetched: fetched, version: state.version)
        }
    }

    /// The replies to `lookup.commands` (starting with the first), as one HMGET-shaped reply per want,
    /// fields in the want's order; nil when the registry changed since the held entries were read
    /// (they are dropped, so a second `lookup` reads everything).
    public func resolve(_ lookup: Lookup, replies: ArraySlice<RedisReply>) -> [RedisReply]? {
        guard !lookup.commands.isEmpty else { return lookup.wants.map { _ in .array([]) } }
        var replies = replies
        let version = replies.popFirst()?.int ?? 0
        var read: [String: [String: [UInt8]]] = [:]
        for (want, reply) in zip(lookup.fetched, replies) {
            for (field, value) in zip(want.fields, reply.elements) {
                if let bytes = value.bytes { read[want.hash, default: [:]][field] = bytes }
            }
        }
        let now = ContinuousClock.now
        let current = state.withLock { state -> Bool in
            if state.version != version {
                state.version = version
                state.entries = [:]
                state.count = 0
            }
            if state.count > capacity {
                state.entries = [:]
                state.count = 0
            }
            for (hash, fields) in read {
                for (field, value) in fields {
                    if state.entries[hash]?[field] == nil { state.count += 1 }
                    state.entries[hash, default: [:]][field] = Entry(value: value, readAt: now)
                }
            }
            return lookup.version == version
        }
        guard current || lookup.held.isEmpty else { return nil }
        return lookup.wants.map { want in
            .array(
                want.fields.map { field in
                    (read[want.hash]?[field] ?? lookup.held[want.hash]?[field]).map(RedisReply.bulk) ?? .null
                })
        }
    }
}

/// One batch's registry reads through a `RegistryCache`, across the worker's attempts at the batch:
/// `commands` plans the lookups, `resolve` takes their replies (false: read again), `replies` gives
/// one HMGET-shaped reply per want to decode.
public final class RegistryReads: Sendable {
    let cache: RegistryCache
    let wants: [RegistryCache.Want]
    private let planned = Mutex<RegistryCache.Lookup?>(nil)
    private let resolved = Mutex<[RedisReply]>([])

    public init(_ cache: RegistryCache, _ wants: [RegistryCache.Want]) {
        self.cache = cache
        self.wants = wants
    }

    /// The lookups for this attempt.
    public func commands() -> [RedisCommand] {
        let lookup = cache.lookup(wants)
        planned.withLock { $0 = lookup }
        return lookup.commands
    }

    /// Takes the replies to `commands()` (the first of `lookups`); false when they must be read again.
    public func resolve(_ lookups: ArraySlice<RedisReply>) -> Bool {
        guard let lookup = planned.withLock({ $0 }), let replies = cache.resolve(lookup, replies: lookups) else { return false }
        resolved.withLock { $0 = replies }
        return true
    }

    /// How many of the lookups' replies are the registry's (where the stage's own begin).
    public var count: Int { planned.withLock { $0?.commands.count ?? 0 } }

    /// One reply per want, in order: an array of the want's fields' values (null where absent).
    public var replies: [RedisReply] { resolved.withLock { $0 } }
}
