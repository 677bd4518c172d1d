/// Reading new entries from every partition's stream.
extension StageWorker {
    /// New entries of every partition, each tagged with its partition.
    ///
    /// Where partitions share transactions (one Redis), one XREADGROUP over every partition's stream
    /// waits up to `blockMilliseconds`: an idle worker sleeps in Redis and wakes the moment an entry
    /// arrives. On Redis Cluster a command cannot name streams in different slots, and a blocking read
    /// per partition would need a connection each; so a round of non-blocking reads, one per
    /// partition in one pipeline (the transport sends one round trip per node), and when every
    /// partition was empty a pause that doubles from 1 ms to `idlePollMilliseconds`.
    func readNew() async throws -> [StreamEntry] {
        let partitions = self.configuration.readIndices.map { self.configuration.partitions[$0] }
        if self.configuration.partitionsShareTransactions || partitions.count == 1 {
            let reply = try await self.connection.send(self.readCommand(partitions.map(\.stream), block: true))
            return try self.entries(in: reply)
        }
        let replies = try await self.connection.pipeline(partitions.map { self.readCommand([$0.stream], block: false) })
        var entries: [StreamEntry] = []
        for reply in replies {
            if let message = reply.errorMessage { throw RedisError(.server, message) }
            entries += try self.entries(in: reply)
        }
        let pause = self.state.withLock { state -> Int in
            state.idlePause = entries.isEmpty ? min(state.idlePause * 2, self.configuration.idlePollMilliseconds) : 1
            return entries.isEmpty ? state.idlePause : 0
        }
        if pause > 0 { try? await Task.sleep(for: .milliseconds(pause)) }
        return entries
    }

    /// This consumer's own pending entries (`XREADGROUP … <id>`: delivered to it, not acknowledged) of
    /// each partition of `unfinished`, after its id, each from the node serving the partition now:
    /// entries it left (`survived`) are taken up again at once, before anything newer of their
    /// partition, where they survived, rather than after `claimIdleMilliseconds`.
    func readOwnPending(after unfinished: [Int: StreamTrim.EntryID]) async throws -> [StreamEntry] {
        let partitions = unfinished.keys.sorted()
        let replies = try await self.connection.pipeline(
            partitions.map {
                self.readCommand([self.configuration.partitions[$0].stream], block: false, after: "\(unfinished[$0]!)")
            })
        var entries: [StreamEntry] = []
        for reply in replies {
            if let message = reply.errorMessage { throw RedisError(.server, message) }
            entries += try self.entries(in: reply)
        }
        return entries
    }

    /// The batches to process: up to `batchSize` entries each, and one partition each unless
    /// partitions share transactions.
    func batches(_ entries: [StreamEntry]) -> [[StreamEntry]] {
        let size = max(1, self.configuration.batchSize)
        var groups: [[StreamEntry]] = []
        if self.configuration.partitionsShareTransactions {
            groups = [entries]
        } else {
            var byPartition: [Int: [StreamEntry]] = [:]
            for entry in entries { byPartition[entry.partition, default: []].append(entry) }
            groups = byPartition.keys.sorted().map { byPartition[$0]! }
        }
        return groups.flatMap { group in
            stride(from: 0, to: group.count, by: size).map { Array(group[$0..<min($0 + size, group.count)]) }
        }
    }

    /// `after`: `>` for entries never delivered, an id for this consumer's own pending ones after it.
    private func readCommand(_ streams: [String], block: Bool, after: String = ">") -> RedisCommand {
        var arguments = [
            "XREADGROUP", "GROUP", self.configuration.group, self.configuration.consumer, "COUNT",
            String(self.configuration.batchSize),
        ]
        if block, self.configuration.blockMilliseconds > 0 {
            arguments += ["BLOCK", String(self.configuration.blockMilliseconds)]
        }
        arguments += ["STREAMS"] + streams + streams.map { _ in after }
        return RedisCommand(arguments)
    }

    /// `[[stream, entries], ...]` (nil when a BLOCK timed out) as entries tagged with their partition.
    private func entries(in reply: RedisReply) throws -> [StreamEntry] {
        var entries: [StreamEntry] = []
        for streamReply in reply.elements {
            let parts = streamReply.elements
            guard parts.count == 2, let name = parts[0].string,
                let partition = self.partitionIndex[name]
            else {
                throw RedisError(.unexpectedReply, "XREADGROUP reply names an unknown stream or has \(parts.count) parts")
            }
            entries += try StreamEntry.parse(parts[1]).entries.map { entry in
                var entry = entry
                entry.partition = partition
                return entry
            }
        }
        return entries
    }
}
