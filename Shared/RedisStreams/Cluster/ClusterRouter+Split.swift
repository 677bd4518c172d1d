/// Every other pipeline: split by node, one round trip per node, replies reassembled in order.
extension ClusterRouter {
    /// Where one command of a split pipeline goes.
    private enum Target: Equatable {
        case node(Node)
        /// Commands meant for the whole data set (SCRIPT LOAD, FLUSHALL): every primary.
        case everyPrimary
    }

    /// Any other pipeline is split by node: one round trip per node involved, all nodes at once, replies
    /// put back in the original order. Redirected commands are resent per command, in rounds.
    func executeSplit(_ commands: [RedisCommand], slots: PipelineSlots) throws -> [RedisReply] {
        var targets = self.targets(of: commands, slots: slots.slots)
        var replies = [RedisReply?](repeating: nil, count: commands.count)
        var asking = [Bool](repeating: false, count: commands.count)
        var redirects = [Int](repeating: 0, count: commands.count)
        var backoff = self.backoff()
        var pending = Array(commands.indices)

        while !pending.isEmpty {
            var parts: [(node: Node, indices: [Int])] = []
            var partOf: [String: Int] = [:]
            for index in pending {
                let nodes: [Node]
                switch targets[index] {
                case .node(let node): nodes = [node]
                case .everyPrimary: nodes = self.everyPrimary
                }
                for node in nodes {
                    if let part = partOf[node.address] {
                        parts[part].indices.append(index)
                    } else {
                        partOf[node.address] = parts.count
                        parts.append((node, [index]))
                    }
                }
            }
            let answers = try self.roundTrips(
                parts.map { part in
                    (part.node, part.indices.flatMap { asking[$0] ? [RedisCommand("ASKING"), commands[$0]] : [commands[$0]] })
                }
            )

            var retry: [Int] = []
            var firstRedirect: ClusterRedirect?
            var waiting: [Int: RedisReply] = [:]  // TRYAGAIN / CLUSTERDOWN, by command
            var reloads = false
            for (part, answer) in zip(parts, answers) {
                var cursor = 0
                for index in part.indices {
                    if asking[index] { cursor += 1 }  // ASKING's +OK is ours, not the caller's
                    let reply = answer[cursor]
                    cursor += 1
                    if targets[index] == .everyPrimary {
                        // One reply stands for all nodes: the first error if any node failed.
                        if replies[index] == nil || (reply.errorMessage != nil && replies[index]?.errorMessage == nil) {
                            replies[index] = reply
                        }
                        continue
                    }
                    asking[index] = false
                    guard let redirect = ClusterRedirect(reply, from: part.node), redirects[index] < Self.maxRedirects
                    else {
                        replies[index] = reply
                        if let slot = slots.slots[index] { self.answeredBy[slot] = part.node.address }
                        continue
                    }
                    redirects[index] += 1
                    retry.append(index)
                    firstRedirect = firstRedirect ?? redirect
                    if redirect.needsBackoff { waiting[index] = reply }
                    self.learn(from: redirect)
                    switch redirect {
                    case .moved(_, let node):
                        targets[index] = .node(node)
                    case .ask(_, let node):
                        targets[index] = .node(node)
                        asking[index] = true
                    case .tryAgain, .clusterDown, .readOnly, .unblocked:
                        // Back to the owner per the map (reloaded below): a TRYAGAIN target mid-migration
                        // or a demoted primary is no place to insist on.
                        if let slot = slots.slots[index] { targets[index] = .node(self.node(forSlot: slot)) }
                    }
                    reloads = reloads || redirect.reloadsNow
                }
            }
            if let firstRedirect {
                self.logger.debug(
                    "redis cluster commands redirected",
                    metadata: [
                        "redis.count": "\(retry.count)", "redis.pipeline": "\(commands.count)",
                        "redis.redirect": "\(firstRedirect)",
                    ]
                )
            }
            if !waiting.isEmpty, !self.pause(&backoff) {
                // Out of patience: those error replies go back as they are.
                for (index, reply) in waiting { replies[index] = reply }
                retry.removeAll { waiting[$0] != nil }
            }
            if reloads, (try? self.refreshTopology()) != nil {
                for index in retry where !asking[index] {
                    if let slot = slots.slots[index] { targets[index] = .node(self.node(forSlot: slot)) }
                }
            }
            pending = retry.sorted()
        }
        let answered = replies.map { $0 ?? .error("ERR no reply (cluster routing)") }
        // Only UNWATCH can matter here: WATCH, EXEC and DISCARD make a pipeline a transaction unit.
        self.watch = OutstandingWatch.after(self.watch, commands: commands, slots: slots.slots, replies: answered, node: nil)
        return answered
    }

    /// Each command's node: keyed commands by slot; keyless ones with the nearest keyed command (so
    /// WAIT follows the write before it), UNWATCH to the node holding the WATCH, whole-data-set
    /// commands to every primary, the rest to any node.
    private func targets(of commands: [RedisCommand], slots: [Int?]) -> [Target] {
        var targets: [Target?] = slots.map { slot in slot.map { .node(self.node(forSlot: $0)) } }
        let keyed = targets.indices.filter { targets[$0] != nil }
        for index in commands.indices where targets[index] == nil {
            let command = commands[index]
            if Self.isForEveryPrimary(command) {
                targets[index] = .everyPrimary
            } else if command.name == "UNWATCH", let watch = self.watch, !watch.isLost, let node = watch.node {
                targets[index] = .node(node)
            } else if let nearest = Self.nearest(to: index, among: keyed) {
                targets[index] = targets[nearest]
            } else {
                targets[index] = .node(self.anyNode)
            }
        }
        return targets.map { $0 ?? .node(self.anyNode) }
    }

    /// The element of `sorted` closest to `index`; on a tie the one before it.
    private static func nearest(to index: Int, among sorted: [Int]) -> Int? {
        var low = 0
        var high = sorted.count
        while low < high {
            let middle = (low + high) / 2
            if sorted[middle] < index { low = middle + 1 } else { high = middle }
        }
        let before = low > 0 ? sorted[low - 1] : nil
        let after = low < sorted.count ? sorted[low] : nil
        guard let before else { return after }
        guard let after else { return before }
        return index - before <= after - index ? before : after
    }

    /// Commands that act on the whole data set, which a cluster spreads over every primary: a script is
    /// loaded everywhere so EVALSHA finds it on whichever node owns its keys.
    private static func isForEveryPrimary(_ command: RedisCommand) -> Bool {
        switch command.name {
        case "FLUSHALL", "FLUSHDB":
            return true
        case "SCRIPT":
            guard command.arguments.count > 1 else { return false }
            let subcommand = String(decoding: command.arguments[1], as: UTF8.self).uppercased()
            return subcommand == "LOAD" || subcommand == "FLUSH"
        default:
            return false
        }
    }

}
