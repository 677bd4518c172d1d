/// Transaction units: a pipeline with MULTI, WATCH, EXEC or DISCARD runs on one node as a whole.
extension ClusterRouter {
    /// A transaction unit (MULTI, WATCH, EXEC or DISCARD inside) goes as a whole to the node of its one slot.
    ///
    /// When a redirect comes back, nothing in the unit ran: a redirected command is refused, so a
    /// redirected WATCH holds nothing and a queued write makes EXEC answer EXECABORT. Then:
    /// - a unit with its own WATCH is sent again, whole, to the right node: it re-creates all it relies on;
    /// - a unit whose MULTI relies on a WATCH sent in an earlier pipeline is not: EXECABORT released that
    ///   WATCH, and another node never had it, so a resend would commit unguarded. It throws
    ///   `redirected` and the caller redoes its read-decide-write cycle (without an earlier WATCH it is
    ///   self-contained and is resent like the first kind);
    /// - `ASK` throws `redirected` too: mid-migration the slot's keys are split between two nodes and
    ///   `ASKING` covers a single command, so neither node can run the unit whole until the migration
    ///   has moved on. The backoff before throwing keeps the caller's redo from spinning.
    ///
    /// A `pinned` unit runs on that node or not at all: when its slot is served elsewhere now (before it
    /// is sent, or after a redirect) it throws `redirected` without sending. A stage commits a batch
    /// with the acknowledgement of its entries, and after a failover the new primary may not have those
    /// entries (the old one took them after its last replication): the batch's writes there would
    /// stand with nothing to show they were made, and the entries' redelivery would make them again.
    func executeUnit(_ commands: [RedisCommand], slots: PipelineSlots, pinned: String? = nil) throws -> [RedisReply] {
        let earlierWatch = slots.containsMulti && !slots.containsWatch ? self.watch : nil
        var backoff = self.backoff()
        var redirects = 0
        while true {
            let node = self.target(ofUnit: slots)
            if let pinned, node.address != pinned {
                throw RedisError(
                    .redirected,
                    "slot \(slots.unitSlot.map(String.init) ?? "-") is served by \(node.address), not \(pinned), "
                        + "where the transaction's inputs were read; it was not sent there"
                )
            }
            if let earlierWatch {
                try self.confirm(earlierWatch, isHeldOn: node)
            }
            let replies = try self.using(node) { try $0.execute(commands) }
            self.recordWatch(after: commands, slots: slots.slots, replies: replies, on: node)
            guard let redirect = replies.lazy.compactMap({ ClusterRedirect($0, from: node) }).first else {
                if let slot = slots.unitSlot { self.answeredBy[slot] = node.address }
                return replies
            }
            redirects += 1
            self.logger.debug(
                "redis cluster transaction redirected",
                metadata: ["redis.node": "\(node)", "redis.redirect": "\(redirect)", "redis.redirects": "\(redirects)"]
            )
            if earlierWatch != nil || redirect.isAsk {
                self.learn(from: redirect)
                if redirect.needsBackoff || redirect.isAsk { _ = self.pause(&backoff) }
                throw RedisError(
                    .redirected,
                    "transaction on slot \(slots.unitSlot.map(String.init) ?? "-") was redirected (\(redirect)) "
                        + "and did not run; redo it from its reads"
                )
            }
            guard redirects <= Self.maxRedirects else { return replies }
            if redirect.needsBackoff, !self.pause(&backoff) { return replies }
            self.learn(from: redirect)
            if self.refreshDue, redirect.reloadsNow {
                try? self.refreshTopology()
            }
        }
    }

    /// Throws `redirected` unless `watch` is still held on `node`'s connection.
    private func confirm(_ watch: OutstandingWatch, isHeldOn node: Node) throws {
        guard watch.isLost || watch.node?.address != node.address else { return }
        if !watch.isLost, let held = watch.node {
            // Closing the connection that holds the stale WATCH releases it on the server.
            self.forget(held.address)
        }
        self.watch = nil
        throw RedisError(
            .redirected,
            watch.isLost
                ? "the connection holding the transaction's WATCH was lost; redo it from its reads"
                : "slot \(watch.slot) moved to \(node) after the transaction's WATCH; redo it from its reads"
        )
    }

    /// The node a unit goes to: its slot's, else the one holding the WATCH it ends, else any.
    private func target(ofUnit slots: PipelineSlots) -> Node {
        if let slot = slots.unitSlot { return self.node(forSlot: slot) }
        if let watch = self.watch, !watch.isLost, let node = watch.node { return node }
        return self.anyNode
    }

    /// Tracks the WATCH after a round trip on `node`; a new WATCH elsewhere releases a forgotten old one.
    private func recordWatch(after commands: [RedisCommand], slots: [Int?], replies: [RedisReply], on node: Node) {
        let previous = self.watch
        self.watch = OutstandingWatch.after(previous, commands: commands, slots: slots, replies: replies, node: node)
        if let old = previous?.node, previous?.isLost == false, let current = self.watch, current != previous,
            current.node?.address != old.address
        {
            // WATCH is per connection: left on the old node it would fail an unrelated EXEC there later.
            self.forget(old.address)
        }
    }

}
