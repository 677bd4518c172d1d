import RedisStreams

/// Resharding, the way `redis-cli --cluster reshard` does it, in steps a test can stop between.
extension RedisCluster {
    /// A slot on its way from one primary to another: `IMPORTING` on the target, `MIGRATING` on the source.
    public struct SlotMigration: Sendable {
        /// The slot being moved.
        public let slot: Int
        /// The port of the primary giving the slot away.
        public let source: Int
        /// The port of the primary receiving it.
        public let target: Int
        fileprivate let sourceID: String
        fileprivate let targetID: String
    }

    /// Moves `slot` and its keys to the primary on `port`, the way `redis-cli --cluster reshard` does:
    /// IMPORTING/MIGRATING, MIGRATE of every key, then `SETSLOT … NODE` on every primary.
    public func moveSlot(_ slot: Int, to port: Int) async throws {
        let migration = try await self.beginMigration(ofSlot: slot, to: port)
        try await self.finishMigration(migration)
    }

    /// Marks `slot` importing on `port` and migrating on its owner; keys stay where they are until
    /// `migrateKeys`. Meanwhile the source answers `ASK` for keys it no longer has.
    public func beginMigration(ofSlot slot: Int, to port: Int) async throws -> SlotMigration {
        let source = try await self.owner(ofSlot: slot)
        guard source != port else { throw LaunchError("slot \(slot) is already on \(port)") }
        let migration = SlotMigration(
            slot: slot,
            source: source,
            target: port,
            sourceID: try await self.nodeID(port: source),
            targetID: try await self.nodeID(port: port)
        )
        try await self.expectOK(
            RedisCommand("CLUSTER", "SETSLOT", String(slot), "IMPORTING", migration.sourceID),
            on: port
        )
        try await self.expectOK(
            RedisCommand("CLUSTER", "SETSLOT", String(slot), "MIGRATING", migration.targetID),
            on: source
        )
        return migration
    }

    /// Moves `keys` (all keys left in the slot when nil) from source to target with `MIGRATE`; returns
    /// how many were moved.
    @discardableResult
    public func migrateKeys(_ migration: SlotMigration, keys: [String]? = nil) async throws -> Int {
        if let keys {
            try await self.migrate(keys, of: migration)
            return keys.count
        }
        var moved = 0
        while true {
            let reply = try await self.command(
                RedisCommand("CLUSTER", "GETKEYSINSLOT", String(migration.slot), "100"),
                on: migration.source
            )
            let batch = reply.elements.compactMap(\.string)
            if batch.isEmpty { return moved }
            try await self.migrate(batch, of: migration)
            moved += batch.count
        }
    }

    /// Migrates what is left, then assigns the slot to the target: on the target first, then the source
    /// (so no moment has both refusing it), then every other primary, as the cluster tutorial does.
    public func finishMigration(_ migration: SlotMigration) async throws {
        try await self.migrateKeys(migration)
        let assign = RedisCommand("CLUSTER", "SETSLOT", String(migration.slot), "NODE", migration.targetID)
        try await self.expectOK(assign, on: migration.target)
        try await self.expectOK(assign, on: migration.source)
        for port in try await self.primaries where port != migration.target && port != migration.source {
            try await self.expectOK(assign, on: port)
        }
    }

    private func migrate(_ keys: [String], of migration: SlotMigration) async throws {
        guard !keys.isEmpty else { return }
        let reply = try await self.command(
            RedisCommand(["MIGRATE", "127.0.0.1", String(migration.target), "", "0", "5000", "KEYS"] + keys),
            on: migration.source
        )
        guard reply == .status("OK") || reply == .status("NOKEY") else {
            throw LaunchError("MIGRATE of \(keys.count) keys answered \(reply)")
        }
    }

    private func expectOK(_ command: RedisCommand, on port: Int) async throws {
        let reply = try await self.command(command, on: port)
        guard reply == .status("OK") else { throw LaunchError("\(command) on \(port) answered \(reply)") }
    }
}
