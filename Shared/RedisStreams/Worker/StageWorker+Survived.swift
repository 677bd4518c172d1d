/// Deliveries a worker survived, given back to Redis's delivery count.
///
/// A claimed entry is dead-lettered once Redis has delivered it `maxAttempts` times without an
/// acknowledgement: each consumer that took it must have stopped (a poison entry that crashes its
/// process). A worker that is only cut off from Redis (a failover, a partition, a command timeout)
/// also leaves its entries pending, and their next claim counts another delivery. So when a batch
/// or a claimed entry fails because Redis was unavailable (`RedisError.isUnavailability`: not an error
/// reply to what was sent, which an entry can cause every time and must not keep pending forever), the
/// worker remembers those entries and,
/// once Redis answers again, takes that delivery back off their count (`XCLAIM … RETRYCOUNT`), only
/// for entries still pending and still its own. The count then says how many consumers stopped
/// holding the entry, as the dead letter's reason claims.
extension StageWorker {
    /// At most this many remembered entries; past it the rest keep their counts (the safe side:
    /// an entry may be dead-lettered early, never kept forever).
    static var survivedLimit: Int { 10_000 }

    /// Remembers `entries` (delivered to this worker, not acknowledged) after an error it survived, or a
    /// batch it left (its partition moved). Their partitions' next read is of this consumer's own
    /// pending entries from the oldest of them (`readOwnPending`): a device's later events do not
    /// overtake them, as they would while they waited to be claimed.
    func survived(_ entries: [StreamEntry]) {
        self.state.withLock { state in
            for entry in entries {
                if state.survivedCount < Self.survivedLimit,
                    state.survived[entry.partition, default: []].insert(entry.id).inserted
                {
                    state.survivedCount += 1
                }
                if let id = StreamTrim.EntryID(entry.id) {
                    let after = id.predecessor
                    state.unfinished[entry.partition] = min(after, state.unfinished[entry.partition] ?? after)
                }
            }
        }
    }

    /// Gives the remembered deliveries back, one script call per partition; on an error they stay
    /// remembered for the next iteration.
    func giveBackSurvivedDeliveries() async throws {
        let survived = self.state.withLock { $0.survived }
        guard !survived.isEmpty else { return }
        let partitions = survived.keys.sorted()
        let calls = partitions.map { partition in
            RedisScript.Call(
                keys: [self.configuration.partitions[partition].stream],
                arguments: ([self.configuration.group, self.configuration.consumer] + survived[partition]!.sorted()).map {
                    Array($0.utf8)
                })
        }
        let replies = try await survivedDeliveriesScript.runAll(calls, on: self.connection)
        if let message = replies.lazy.compactMap(\.errorMessage).first {
            throw RedisError(.server, "giving back survived deliveries failed: \(message)")
        }
        let given = replies.compactMap(\.int).reduce(0, +)
        self.state.withLock { state in
            for partition in partitions {
                state.survivedCount -= state.survived[partition]?.count ?? 0
                state.survived[partition] = nil
            }
        }
        if given > 0 {
            self.logger.info("deliveries survived given back", metadata: ["count": "\(given)"])
        }
    }
}

/// KEYS[1] the stream; ARGV group, consumer, ids. For each id still pending for this consumer with a
/// delivery counted, one delivery fewer, its idle time kept (JUSTID: the claim itself counts none).
private let survivedDeliveriesScript = RedisScript(
    """
    local given = 0
    for i = 3, #ARGV do
      local pending = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1, ARGV[2])
      if #pending == 1 and pending[1][4] > 0 then
        redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'IDLE', pending[1][3],
          'RETRYCOUNT', pending[1][4] - 1, 'JUSTID')
        given = given + 1
      end
    end
    return given
    """)
