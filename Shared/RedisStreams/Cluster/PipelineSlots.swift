/// The hash slots a pipeline touches and whether it is a transaction unit: what routing needs to know
/// before anything is sent, checked against the cluster's one-slot rules.
///
/// Redis Cluster runs a transaction, a script or a multi-key command on one node only, and refuses
/// keys of several slots there (`CROSSSLOT`), even when the node happens to own all of them. Checking
/// locally turns what would be a partial failure mid-pipeline into an error before the first byte.
struct PipelineSlots {
    /// The slot of each command's keys; nil for keyless commands.
    let slots: [Int?]
    /// The pipeline contains `MULTI`, `WATCH`, `EXEC` or `DISCARD`: from the first of them on, it must
    /// run on one node as a whole.
    let isTransactionUnit: Bool
    /// The plain commands ahead of a transaction unit's first transaction command (a stage's lookups
    /// before its WATCH): not part of the unit, so routed like any pipeline; 0 when the pipeline is no unit.
    let leadingPlain: Int
    /// The unit opens a WATCH itself, so re-sending all of it elsewhere re-creates everything it relies on.
    let containsWatch: Bool
    /// The unit contains `MULTI`.
    let containsMulti: Bool
    /// The one slot of a transaction unit's keys; nil when it has none (or the pipeline is no unit).
    let unitSlot: Int?

    /// Computes the slots; throws `crossSlot` for a multi-key command, script or transaction unit whose
    /// keys hash to more than one slot.
    init(_ commands: [RedisCommand]) throws {
        var slots: [Int?] = []
        slots.reserveCapacity(commands.count)
        var containsWatch = false
        var containsMulti = false
        var containsTransactionCommand = false
        var firstTransactionCommand: Int?
        for (index, command) in commands.enumerated() {
            switch command.name {
            case "WATCH": containsWatch = true
            case "MULTI": containsMulti = true
            case "EXEC", "DISCARD": containsTransactionCommand = true
            default: break
            }
            if containsWatch || containsMulti || containsTransactionCommand, firstTransactionCommand == nil {
                firstTransactionCommand = index
            }
            slots.append(try Self.slot(of: command))
        }
        self.slots = slots
        self.containsWatch = containsWatch
        self.containsMulti = containsMulti
        self.isTransactionUnit = containsWatch || containsMulti || containsTransactionCommand
        self.leadingPlain = firstTransactionCommand ?? 0
        guard self.isTransactionUnit else {
            self.unitSlot = nil
            return
        }
        let keyed = Set(slots[self.leadingPlain...].compactMap { $0 })
        if keyed.count > 1 {
            let some = keyed.sorted().prefix(3).map(String.init).joined(separator: ", ")
            throw RedisError(
                .crossSlot,
                "transaction keys hash to \(keyed.count) slots (\(some)\(keyed.count > 3 ? ", …" : "")); "
                    + "Redis Cluster runs a transaction in one slot only: give its keys one {hash tag}"
            )
        }
        self.unitSlot = keyed.first
    }

    /// The one slot of a command's keys; nil for keyless commands; `crossSlot` when they span several.
    private static func slot(of command: RedisCommand) throws -> Int? {
        let indices = CommandKeys.keyIndices(of: command)
        guard let first = indices.first else { return nil }
        let slot = ClusterSlot.slot(of: command.arguments[first])
        for index in indices.dropFirst() where ClusterSlot.slot(of: command.arguments[index]) != slot {
            throw RedisError(
                .crossSlot,
                "\(command.name) keys hash to different slots (\(slot) and "
                    + "\(ClusterSlot.slot(of: command.arguments[index]))); give them one {hash tag}"
            )
        }
        return slot
    }
}
