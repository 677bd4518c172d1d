/// Merges a stage transaction's writes to one key into fewer commands with the same effect.
///
/// A batch's entries each bring their own writes, and many land on the same key: a device's state
/// set once per message, the settling queue or window timers of one partition (a ZADD and an HSET per
/// item), a crowd counter raised by every conversion of the batch (HINCRBY, HDEL of stale days,
/// PEXPIRE each). Inside MULTI/EXEC nothing else runs between them, so what matters is only each key's
/// final state; commands are merged only for a key that nothing but these shapes touches in the
/// transaction (any other command on it, a script or a read, leaves all of that key's commands as
/// they were):
///
/// - only plain `ZADD key score member …` (no flags): one ZADD with every pair, in order (Redis adds
///   the pairs of one ZADD one after another, so a member given twice keeps the later score, as with
///   two commands);
/// - only `HSET key field value …`: one HSET with every pair, in order (same rule);
/// - only `SET key value [PX|EX n]`: the last one (each SET replaces the value and the expiry);
/// - only `HINCRBY key field n`, `HDEL key field …` and `PEXPIRE key ms` (one `ms` for all), where a
///   PEXPIRE, if any, comes last, or there is no HDEL: each field's operations reduce to "add n",
///   "delete" or "delete, then add n" (= HSET n); then one PEXPIRE. Without the trailing-PEXPIRE rule
///   an HDEL that empties the hash (dropping its TTL) before an increment re-creates it could not be
///   reordered.
///
/// Replies are not one per original command any more: the worker reads only EXEC's nil (a WATCH
/// conflict), errors, and the attempt counts it appends after the writes, which are never merged.
public enum WriteCoalescing {
    public static func coalesce(_ commands: [RedisCommand]) -> [RedisCommand] {
        guard commands.count > 1 else { return commands }
        // Every key each command touches, and for each key the commands touching it.
        var touching: [Key: [Int]] = [:]
        touching.reserveCapacity(commands.count)
        var shapes: [Shape?] = []
        shapes.reserveCapacity(commands.count)
        for (index, command) in commands.enumerated() {
            let shape = Shape(command)
            shapes.append(shape)
            if let shape {
                touching[Key(shape.key), default: []].append(index)
            } else {
                for key in CommandKeys.keys(of: command) { touching[Key(key), default: []].append(index) }
            }
        }
        var replacement: [Int: [RedisCommand]] = [:]  // first index of a merged key → its commands
        var dropped = Set<Int>()
        for (key, indices) in touching where indices.count > 1 {
            let group = indices.compactMap { shapes[$0] }
            // A command of another shape (or one touching several keys) on this key: leave it alone.
            guard group.count == indices.count, let merged = Self.merge(key: key.bytes, group) else { continue }
            replacement[indices[0]] = merged
            dropped.formUnion(indices.dropFirst())
        }
        guard !replacement.isEmpty else { return commands }
        var result: [RedisCommand] = []
        result.reserveCapacity(commands.count - dropped.count)
        for (index, command) in commands.enumerated() where !dropped.contains(index) {
            if let merged = replacement[index] { result += merged } else { result.append(command) }
        }
        return result
    }

    /// The commands for one key's group, or nil when its shapes do not merge.
    static func merge(key: [UInt8], _ group: [Shape]) -> [RedisCommand]? {
        switch group[0] {
        case .zadd:
            var pairs: [[UInt8]] = []
            for shape in group {
                guard case .zadd(_, let more) = shape else { return nil }
                pairs += more
            }
            return [RedisCommand(bytes: [Array("ZADD".utf8), key] + pairs)]
        case .hset:
            var pairs: [[UInt8]] = []
            for shape in group {
                guard case .hset(_, let more) = shape else { return nil }
                pairs += more
            }
            return [RedisCommand(bytes: [Array("HSET".utf8), key] + pairs)]
        case .set:
            guard group.allSatisfy({ if case .set = $0 { true } else { false } }), case .set(_, let last)? = group.last
            else { return nil }
            return [last]
        case .hincrby, .hdel, .pexpire:
            return Self.mergeCounter(key: key, group)
        }
    }

    /// HINCRBY / HDEL / PEXPIRE on one hash, reduced per field (see the type's documentation).
    static func mergeCounter(key: [UInt8], _ group: [Shape]) -> [RedisCommand]? {
        var order: [[UInt8]] = []  // fields in first-seen order, so the output is deterministic
        var fields: [Key: (deleted: Bool, add: Int64)] = [:]
        var expiry: [UInt8]?
        var sawDelete = false
        for shape in group {
            switch shape {
            case .hincrby(_, let field, let amount):
                let field = Key(field)
                if fields[field] == nil { order.append(field.bytes) }
                let (deleted, add) = fields[field] ?? (false, 0)
                let (sum, overflow) = add.addingReportingOverflow(amount)
                if overflow { return nil }
                fields[field] = (deleted, sum)
            case .hdel(_, let deleted):
                sawDelete = true
                for field in deleted.map(Key.init) {
                    if fields[field] == nil { order.append(field.bytes) }
                    fields[field] = (true, 0)
                }
            case .pexpire(_, let milliseconds):
                if let expiry, expiry != milliseconds { return nil }
                expiry = milliseconds
            default:
                return nil
            }
        }
        if expiry != nil {
            guard case .pexpire? = group.last else { return nil }
        } else if sawDelete {
            return nil
        }
        var commands: [RedisCommand] = []
        var sets: [[UInt8]] = []
        var deletes: [[UInt8]] = []
        for field in order {
            guard let (deleted, add) = fields[Key(field)] else { continue }
            switch (deleted, add) {
            case (false, _):
                commands.append(RedisCommand(bytes: [Array("HINCRBY".utf8), key, field, Array(String(add).utf8)]))
            case (true, 0):
                deletes.append(field)
            case (true, _):
                sets += [field, Array(String(add).utf8)]
            }
        }
        if !sets.isEmpty { commands.append(RedisCommand(bytes: [Array("HSET".utf8), key] + sets)) }
        if !deletes.isEmpty { commands.append(RedisCommand(bytes: [Array("HDEL".utf8), key] + deletes)) }
        if let expiry { commands.append(RedisCommand(bytes: [Array("PEXPIRE".utf8), key, expiry])) }
        return commands
    }

    /// A key's bytes, hashed in one call: `[UInt8]`'s own hashing feeds the hasher a byte at a time, and
    /// with a table resize rehashing every key that was most of this function's cost (the scheduler's
    /// transactions carry a few hundred keys per batch).
    struct Key: Hashable {
        let bytes: [UInt8]
        init(_ bytes: [UInt8]) { self.bytes = bytes }
        func hash(into hasher: inout Hasher) { bytes.withUnsafeBytes { hasher.combine(bytes: $0) } }
    }

    /// The command shapes that merge, parsed strictly: anything else (flags, odd arity) is not one.
    enum Shape {
        case zadd(key: [UInt8], pairs: [[UInt8]])
        case hset(key: [UInt8], pairs: [[UInt8]])
        case set(key: [UInt8], command: RedisCommand)
        case hincrby(key: [UInt8], field: [UInt8], amount: Int64)
        case hdel(key: [UInt8], fields: [[UInt8]])
        case pexpire(key: [UInt8], milliseconds: [UInt8])

        var key: [UInt8] {
            switch self {
            case .zadd(let key, _), .hset(let key, _), .set(let key, _), .hincrby(let key, _, _), .hdel(let key, _),
                .pexpire(let key, _):
                key
            }
        }

        init?(_ command: RedisCommand) {
            let arguments = command.arguments
            guard arguments.count >= 3 else { return nil }
            let key = arguments[1]
            switch command.name {
            case "ZADD":
                // `ZADD key score member …` only: a first argument that is not a number is a flag (NX, GT, INCR…).
                let pairs = Array(arguments[2...])
                guard pairs.count % 2 == 0, Double(String(decoding: pairs[0], as: UTF8.self)) != nil else { return nil }
                self = .zadd(key: key, pairs: pairs)
            case "HSET":
                let pairs = Array(arguments[2...])
                guard pairs.count % 2 == 0 else { return nil }
                self = .hset(key: key, pairs: pairs)
            case "SET":
                // `SET key value` or `SET key value PX|EX n`: no NX, XX, GET or KEEPTTL.
                if arguments.count == 5 {
                    let option = String(decoding: arguments[3], as: UTF8.self).uppercased()
                    guard option == "PX" || option == "EX" else { return nil }
                } else if arguments.count != 3 {
                    return nil
                }
                self = .set(key: key, command: command)
            case "HINCRBY":
                guard arguments.count == 4, let amount = Int64(String(decoding: arguments[3], as: UTF8.self)) else {
                    return nil
                }
                self = .hincrby(key: key, field: arguments[2], amount: amount)
            case "HDEL":
                self = .hdel(key: key, fields: Array(arguments[2...]))
            case "PEXPIRE":
                guard arguments.count == 3 else { return nil }
                self = .pexpire(key: key, milliseconds: arguments[2])
            default:
                return nil
            }
        }
    }
}
