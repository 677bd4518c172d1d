/// Processing of one batch: read state, decide, commit atomically, count failures, dead-letter.
extension StageWorker {
    /// An entry the stage could not handle this time, with the reason.
    struct Failure {
        let entry: StreamEntry
        let error: String
    }

    /// Processes one batch (never empty); `claimed` marks entries that may carry attempt counts.
    ///
    /// On Redis Cluster, `readFrom` is the node the batch was read from, and the batch is committed
    /// there or not at all. After a failover the new primary may lack these entries (the old one took
    /// them after its last replication); the batch's writes committed there would stand, and the
    /// entries, delivered again by their client's retry, would be decided and written a second time
    /// (a conversion attributed twice). Once their partition has moved, the batch is left: its
    /// entries stay pending wherever they survived, and the next read takes this consumer's pending
    /// entries of that partition from the node serving it now (`survived`, `readOwnPending`).
    func process(_ batch: [StreamEntry], claimed: Bool, readFrom node: String? = nil) async throws {
        let started = ContinuousClock.now
        let tries = max(1, self.configuration.maxConflictRetries)
        var writtenCount = 0
        var failures: [Failure] = []
        var attemptCounts: [Int64]?  // set when the failure counts already ran inside EXEC
        var unwatch = false
        var settled = false

        let prepared = self.stage.prepare(batch)
        for attempt in 1...tries {
            let reads = self.stage.reads(for: prepared)
            guard let state = try await self.readState(reads, prepared: prepared) else {
                // The registry changed since the stage cached part of it: read it again before anything is WATCHed.
                self.logger.debug("lookups stale, reading again", metadata: ["attempt": "\(attempt)"])
                continue
            }
            let outcomes: [StageOutcome]
            do {
                outcomes = try await self.decide(batch, prepared: prepared, state: state)
            } catch {
                // Nothing decided: the entries stay pending. Release the WATCH, should the connection still work.
                if !reads.watch.isEmpty { _ = try? await self.connection.send(RedisCommand("UNWATCH")) }
                throw error
            }

            var writes: [RedisCommand] = []
            var written: [StreamEntry] = []
            var writtenCounts: [StageCount] = []
            var after: [RedisCommand] = []
            failures = []
            for (entry, outcome) in zip(batch, outcomes) {
                switch outcome {
                case .write(let commands, let counts, let followUps):
                    writes += commands
                    after += followUps
                    written.append(entry)
                    writtenCounts += counts
                case .failed(let error):
                    failures.append(Failure(entry: entry, error: error))
                }
            }

            if written.isEmpty {
                // Nothing to commit, so no MULTI/EXEC: release the WATCH with the failure counts instead.
                unwatch = !reads.watch.isEmpty
                settled = true
                break
            }

            let replies: [RedisReply]
            do {
                replies = try await self.connection.pipeline(
                    self.transaction(writes: writes, written: written, failures: failures, claimed: claimed), onlyOn: node)
            } catch let error as RedisError where error.code == .redirected {
                // Redis Cluster: nothing was written. The WATCH was lost (its connection dropped), or the
                // partition's slot moved (resharding, failover). Still on the node the batch came from:
                // read again and decide again. Moved: leave the batch (see above).
                if let node, try await self.moved(batch[0].partition, from: node) {
                    self.logger.info(
                        "partition moved since its batch was read; its pending entries are read again where they survived",
                        metadata: ["error": "\(error)", "count": "\(batch.count)"])
                    // A WATCH sent to the new owner by the reads would guard the next, unrelated transaction.
                    if !reads.watch.isEmpty { _ = try? await self.connection.send(RedisCommand("UNWATCH")) }
                    self.survived(batch)
                    return
                }
                self.logger.info("transaction redirected, redoing batch", metadata: ["error": "\(error)"])
                continue
            } catch let error as RedisError where error.code == .crossSlot {
                // A stage wrote outside the batch's slot: a bug, refused before anything was sent. Count it
                // against the entries (they end in dead letters) rather than retry it forever.
                self.logger.error("stage transaction spans hash slots", metadata: ["error": "\(error)"])
                failures = batch.map { Failure(entry: $0, error: "\(error)") }
                unwatch = !reads.watch.isEmpty
                settled = true
                break
            }
            let exec = replies[replies.count - 1]
            if exec.isNull {
                // A WATCHed key changed after we read it: our decisions may be stale, so decide again.
                self.logger.debug(
                    "watched key changed, redoing batch",
                    metadata: ["count": "\(batch.count)", "attempt": "\(attempt)"]
                )
                continue
            }
            if let message = exec.errorMessage {
                // EXECABORT: Redis rejected a queued command (a stage bug), so nothing ran.
                let reason = replies.dropFirst().dropLast().lazy.compactMap(\.errorMessage).first ?? message
                failures = batch.map { Failure(entry: $0, error: "transaction aborted: \(reason)") }
                settled = true
                break
            }
            self.logCommandErrors(exec.elements)
            writtenCount = written.count
            // Counted only now, before any later bookkeeping can throw: a batch redone after a WATCH
            // conflict decided twice but committed once.
            if !writtenCounts.isEmpty { self.observer?.committed(writtenCounts) }
            self.stage.committed(prepared)
            if !after.isEmpty {
                // Views written after the commit (refusal logs) may be lost; the batch is done either way.
                do {
                    self.logCommandErrors(try await self.connection.pipeline(after))
                } catch {
                    self.logger.error("writing after the commit failed", metadata: ["error": "\(error)"])
                }
            }
            attemptCounts = exec.elements.suffix(failures.count).map { $0.int ?? 0 }
            settled = true
            break
        }

        if !settled {
            // A key that keeps changing must not stall the stage: count it against the entries like any failure.
            failures = batch.map { Failure(entry: $0, error: "watched keys kept changing (\(tries) tries)") }
        }
        let attempts: [Int64]
        if let attemptCounts {
            attempts = attemptCounts
        } else {
            attempts = try await self.countFailures(failures, unwatch: unwatch)
        }
        let dead = zip(failures, attempts).filter { $0.1 >= Int64(self.configuration.maxAttempts) }.map(\.0)
        try await self.deadLetter(dead, on: node)

        let seconds = Self.seconds(ContinuousClock.now - started)
        self.logger.debug(
            "stream batch processed",
            metadata: [
                "count": "\(batch.count)", "written": "\(writtenCount)", "failed": "\(failures.count)",
                "dead": "\(dead.count)",
            ]
        )
        for failure in failures where !dead.contains(where: { $0.entry.id == failure.entry.id }) {
            self.logger.warning(
                "stream entry failed, will retry",
                metadata: ["entry.id": "\(failure.entry.id)", "error": "\(failure.error)"]
            )
        }
        self.observer?.batchProcessed(
            stage: self.configuration.group,
            written: writtenCount,
            failed: failures.count,
            deadLettered: dead.count,
            seconds: seconds
        )
    }

    /// The lookups, then WATCH (if any keys) and the stage's reads (GETs and MGETs merged), in one round
    /// trip (on a cluster, the lookups' nodes first, then the watched slot's); returns the replies to the
    /// lookups followed by those to the reads, or nil when the stage found its lookups stale. Each round
    /// trip a batch saves is worth most where Redis is not on the same host.
    private func readState(_ reads: StageReads, prepared: Stage.Prepared) async throws -> [RedisReply]? {
        var commands = reads.lookups
        if !reads.watch.isEmpty {
            commands.append(RedisCommand(["WATCH"] + reads.watch))
        }
        // The stage's GETs and MGETs as one MGET (see `ReadCoalescing`).
        let coalesced = ReadCoalescing(reads.commands)
        commands += coalesced.commands
        let replies = try await self.connection.pipeline(commands)
        let lookups = Array(replies.prefix(reads.lookups.count))
        var rest = replies.dropFirst(reads.lookups.count)
        // A stage deciding from a failed read (a registry entry, a crowd count) would decide wrongly
        // and for good: the batch waits for Redis instead (its entries stay pending).
        if let message = lookups.lazy.compactMap(\.errorMessage).first {
            try await self.unwatch(reads)
            throw RedisError(.server, "a lookup failed: \(message)")
        }
        guard self.stage.lookupsCurrent(prepared, lookups: lookups) else {
            try await self.unwatch(reads)
            return nil
        }
        if !reads.watch.isEmpty {
            if let message = rest.first?.errorMessage {
                throw RedisError(.server, "WATCH failed: \(message)")
            }
            rest = rest.dropFirst()
        }
        return lookups + coalesced.replies(Array(rest))
    }

    /// Releases the WATCH `readState` sent with reads it will not decide from.
    private func unwatch(_ reads: StageReads) async throws {
        if !reads.watch.isEmpty { _ = try await self.connection.pipeline([RedisCommand("UNWATCH")]) }
    }

    /// The stage's outcomes, guarding against a stage that returns the wrong number of them.
    private func decide(_ batch: [StreamEntry], prepared: Stage.Prepared, state: [RedisReply]) async throws -> [StageOutcome] {
        let outcomes = try await self.stage.decide(prepared, state: state)
        guard outcomes.count == batch.count else {
            let error = "stage returned \(outcomes.count) outcomes for \(batch.count) entries"
            self.logger.error("stage broke its contract", metadata: ["error": "\(error)"])
            return batch.map { _ in .failed(error) }
        }
        return outcomes
    }

    /// MULTI, the writes, one XACK per partition, attempt bookkeeping, EXEC.
    private func transaction(
        writes: [RedisCommand],
        written: [StreamEntry],
        failures: [Failure],
        claimed: Bool
    ) -> [RedisCommand] {
        var commands = [RedisCommand("MULTI")]
        // Writes of the batch's entries to one key (a device's state, a partition's timers, a crowd
        // counter) merged into fewer commands with the same effect: see `WriteCoalescing`.
        commands += WriteCoalescing.coalesce(writes)
        for (partition, ids) in Self.idsByPartition(written) {
            let stream = self.configuration.partitions[partition]
            commands.append(StreamCommands.ack(stream.stream, group: self.configuration.group, ids: ids))
            if claimed {
                // Only redelivered entries can have failed before; fresh ones never have a count to clean up.
                commands.append(RedisCommand(["HDEL", stream.attemptsKey] + ids))
            }
        }
        // Counted inside the transaction so a WATCH conflict, which redoes the batch, does not count twice.
        commands += failures.map(self.countAttempt)
        commands.append(RedisCommand("EXEC"))
        return commands
    }

    /// HINCRBY of one failed entry's attempts in its partition.
    private func countAttempt(_ failure: Failure) -> RedisCommand {
        RedisCommand("HINCRBY", self.configuration.partitions[failure.entry.partition].attemptsKey, failure.entry.id, "1")
    }

    /// Entry ids grouped by partition, partitions in ascending order.
    static func idsByPartition(_ entries: [StreamEntry]) -> [(Int, [String])] {
        var ids: [Int: [String]] = [:]
        for entry in entries { ids[entry.partition, default: []].append(entry.id) }
        return ids.keys.sorted().map { ($0, ids[$0]!) }
    }

    /// HINCRBY per failure (and UNWATCH if needed) in one round trip; returns the new counts.
    private func countFailures(_ failures: [Failure], unwatch: Bool) async throws -> [Int64] {
        var commands: [RedisCommand] = unwatch ? [RedisCommand("UNWATCH")] : []
        commands += failures.map(self.countAttempt)
        let replies = try await self.connection.pipeline(commands)
        return replies.suffix(failures.count).map { reply in
            guard let count = reply.int else {
                self.logger.error("counting a failed attempt failed", metadata: ["error": "\(reply)"])
                return 0
            }
            return count
        }
    }

    /// Moves entries out of attempts into their partition's dead-letter stream, all in one MULTI/EXEC,
    /// on `node` only (the node they were read from, on Redis Cluster: see `process`).
    func deadLetter(_ dead: [Failure], on node: String? = nil) async throws {
        guard !dead.isEmpty else { return }
        var commands = [RedisCommand("MULTI")]
        for failure in dead {
            let partition = self.configuration.partitions[failure.entry.partition]
            commands.append(
                StreamCommands.add(partition.deadLetterStream, message: failure.entry.message)
                    .appending("error").appending(failure.error)
                    .appending("stream").appending(partition.stream)
                    .appending("id").appending(failure.entry.id)
            )
        }
        for (partition, ids) in Self.idsByPartition(dead.map(\.entry)) {
            let stream = self.configuration.partitions[partition]
            commands.append(StreamCommands.ack(stream.stream, group: self.configuration.group, ids: ids))
            commands.append(RedisCommand(["HDEL", stream.attemptsKey] + ids))
        }
        commands.append(RedisCommand("EXEC"))
        let replies = try await self.connection.pipeline(commands, onlyOn: node)
        if let message = replies[replies.count - 1].errorMessage {
            throw RedisError(.server, "dead-lettering failed: \(message)")
        }
        for failure in dead {
            self.logger.error(
                "stream entry dead-lettered",
                metadata: [
                    "entry.id": "\(failure.entry.id)", "error": "\(failure.error)",
                    "dead.stream": "\(self.configuration.partitions[failure.entry.partition].deadLetterStream)",
                ]
            )
        }
    }

    /// Commands that failed at run time inside EXEC (e.g. WRONGTYPE) have already been applied around; say so loudly.
    private func logCommandErrors(_ results: [RedisReply]) {
        for message in results.compactMap(\.errorMessage) {
            self.logger.error("command in stage transaction failed", metadata: ["error": "\(message)"])
        }
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
