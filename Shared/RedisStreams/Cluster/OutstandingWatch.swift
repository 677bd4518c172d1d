/// The WATCH a connection holds between the pipeline that sends it and the one that ends it (EXEC,
/// DISCARD or UNWATCH): the stage worker sends `WATCH` with its reads and `MULTI … EXEC` with its writes
/// in a later pipeline, and that later pipeline is only safe on the connection that holds the WATCH.
struct OutstandingWatch: Equatable {
    /// The slot of the watched keys.
    var slot: Int
    /// Cluster mode: the node whose connection holds the WATCH; nil on a single node.
    var node: ClusterTopology.Node?
    /// That connection was dropped since, so the server forgot the WATCH.
    var isLost = false

    /// Throws `crossSlot` when a `MULTI` without its own WATCH writes to another slot than the WATCH
    /// sent before it: on a cluster the two would run on different nodes, and the WATCH would guard nothing.
    static func check(_ watch: Self?, against slots: PipelineSlots) throws {
        guard let watch, slots.containsMulti, !slots.containsWatch, let slot = slots.unitSlot, slot != watch.slot
        else { return }
        throw RedisError(
            .crossSlot,
            "transaction writes to slot \(slot) but its WATCH was on slot \(watch.slot); "
                + "Redis Cluster runs a transaction in one slot only: give its keys one {hash tag}"
        )
    }

    /// The WATCH held after `commands` ran on `node` with `replies`: a successful WATCH starts one,
    /// EXEC, DISCARD and UNWATCH end it (EXEC does so whatever it answers, EXECABORT included).
    static func after(
        _ watch: Self?,
        commands: [RedisCommand],
        slots: [Int?],
        replies: [RedisReply],
        node: ClusterTopology.Node?
    ) -> Self? {
        var watch = watch
        for (index, command) in commands.enumerated() {
            switch command.name {
            case "WATCH":
                if replies[index] == .status("OK"), let slot = slots[index] {
                    watch = OutstandingWatch(slot: slot, node: node)
                }
            case "EXEC", "DISCARD", "UNWATCH":
                watch = nil
            default:
                break
            }
        }
        return watch
    }
}
