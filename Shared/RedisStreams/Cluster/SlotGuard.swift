/// The cluster's one-slot rules on a single node (`RedisConfiguration.checksSlots`), so tests running
/// the pipeline on one redis-server catch a transaction or script that a cluster would refuse.
///
/// Only checks: commands go out exactly as without it. Used on the connection's thread only, which
/// serialises access to its state (hence `@unchecked Sendable`).
final class SlotGuard: @unchecked Sendable {
    private var watch: OutstandingWatch?

    /// Throws `crossSlot` before `commands` are sent when a cluster would refuse them.
    func check(_ commands: [RedisCommand]) throws -> PipelineSlots {
        let slots = try PipelineSlots(commands)
        try OutstandingWatch.check(self.watch, against: slots)
        return slots
    }

    /// Notes the WATCH state after `commands` were answered with `replies`.
    func record(_ commands: [RedisCommand], slots: PipelineSlots, replies: [RedisReply]) {
        self.watch = OutstandingWatch.after(
            self.watch,
            commands: commands,
            slots: slots.slots,
            replies: replies,
            node: nil
        )
    }

    /// The connection dropped (an I/O error): the server forgot any WATCH with it.
    func reset() {
        self.watch = nil
    }
}
