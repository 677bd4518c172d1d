import Logging

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Cluster mode of `RedisConnection`: sends each command to the primary serving its hash slot, over
/// one connection per node (a hiredis context, or with TLS an `EventLoopNodeConnection`), follows
/// redirects, and reloads the slot map when it went stale.
///
/// hiredis 0.14 knows nothing of clusters, so this is the client half of the cluster protocol: the
/// map comes from `CLUSTER SLOTS`, a pipeline is split by node and reassembled in order, and
/// `MOVED`/`ASK`/`TRYAGAIN`/`CLUSTERDOWN`/`READONLY`/`UNBLOCKED` are answered per command
/// (`ClusterRouter+Split.swift`). Transactions are the exception: they run on one node as a whole
/// (`ClusterRouter+Transactions.swift`).
///
/// Like `HiredisContext`, every method runs on the connection's single thread, which serialises all
/// access to the state below (hence `@unchecked Sendable` and no locks). A backoff blocks that thread,
/// as any blocking client would; other callers of the connection queue behind it.
final class ClusterRouter: @unchecked Sendable {
    typealias Node = ClusterTopology.Node

    /// Redirects followed per command before its error reply is returned as is: more means the map keeps
    /// changing under us (or two nodes disagree), and following further would loop.
    static let maxRedirects = 16
    /// Most a call waits in total on `TRYAGAIN`/`CLUSTERDOWN` (also capped by the command timeout).
    static let maxBackoffMilliseconds = 5_000

    // Internal rather than private only so the router's extensions in other files can reach them.
    let configuration: RedisConfiguration
    let logger: Logger
    /// Where the first map comes from, and the first node asked for every later one.
    let seed: Node
    /// The slot map; nil until the first call loads it.
    var topology: ClusterTopology?
    /// Reload the map before the next call: after MOVED, CLUSTERDOWN, READONLY, UNBLOCKED or a node failing.
    var refreshDue = true
    /// The WATCH this connection holds, and on which node.
    var watch: OutstandingWatch?
    /// The node (`host:port`) that answered this connection's last command on each slot, not with a
    /// redirect: after a read, the node it was read from, whatever the map learned meanwhile.
    var answeredBy: [Int: String] = [:]
    /// One connection per node, by `host:port`, created on first use: hiredis's, or with TLS the event loop's.
    private var contexts: [String: any ClusterNodeConnection] = [:]
    private var isClosed = false

    /// A router for the cluster that `configuration`'s host and port (the seed) belong to; connects lazily.
    init(configuration: RedisConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        self.seed = Node(host: configuration.host, port: configuration.port)
    }

    /// Runs a pipeline and returns one reply per command, in order, like `HiredisContext.execute`.
    /// `pinned`: the transaction unit runs on that node (`host:port`) or not at all (see `executeUnit`).
    func execute(_ commands: [RedisCommand], pinned: String? = nil) throws -> [RedisReply] {
        if self.isClosed { throw RedisError(.closed, "connection closed") }
        try self.configuration.validate()
        if let empty = commands.first(where: { $0.arguments.isEmpty }) {
            throw RedisError(.invalidArgument, "empty redis command: \(empty)")
        }
        // Every local refusal comes before the first byte is sent.
        let slots = try PipelineSlots(commands)
        try self.dropLostWatch(before: slots)
        try OutstandingWatch.check(self.watch, against: slots)
        if self.refreshDue || self.topology == nil {
            try self.refreshTopology()
        }
        if slots.isTransactionUnit {
            guard slots.leadingPlain > 0 else { return try self.executeUnit(commands, slots: slots, pinned: pinned) }
            // Plain commands ahead of the unit go wherever their slots are, then the unit to its node: on one
            // server the whole pipeline is one round trip, here it is the two it would be anyway.
            let plain = Array(commands[..<slots.leadingPlain])
            let unit = Array(commands[slots.leadingPlain...])
            let plainReplies = try self.executeSplit(plain, slots: PipelineSlots(plain))
            return plainReplies + (try self.executeUnit(unit, slots: PipelineSlots(unit), pinned: pinned))
        }
        return try self.executeSplit(commands, slots: slots)
    }

    /// A WATCH whose connection dropped guards nothing, and the caller that sent it gave up on it when
    /// that pipeline failed (a stage worker abandons the batch). A later MULTI without its own WATCH in
    /// another slot is therefore not checked against it, which would call a batch that watches nothing
    /// (the verifier's without views) a cross-slot bug; it cannot tell the two apart, though, so it is
    /// not sent either: it throws `redirected`, and the redo, now without the stale WATCH, runs.
    private func dropLostWatch(before slots: PipelineSlots) throws {
        guard let watch = self.watch, watch.isLost, slots.containsMulti, !slots.containsWatch,
            let slot = slots.unitSlot, slot != watch.slot
        else { return }
        self.watch = nil
        throw RedisError(
            .redirected,
            "the connection holding an earlier WATCH (slot \(watch.slot)) was lost; redo the transaction on slot \(slot) from its reads"
        )
    }

    /// Frees every node's context; later calls throw `closed`.
    func close() {
        self.isClosed = true
        for context in self.contexts.values { context.close() }
        self.contexts = [:]
    }

    // MARK: - Nodes and the map

    /// The primary serving `slot` per the map; any node when none does (it will redirect or say CLUSTERDOWN).
    func node(forSlot slot: Int) -> Node {
        self.topology?.node(forSlot: slot) ?? self.anyNode
    }

    /// Every primary of the map (the seed before there is one).
    var everyPrimary: [Node] {
        guard let primaries = self.topology?.primaries, !primaries.isEmpty else { return [self.seed] }
        return primaries
    }

    /// The node (`host:port`) serving each key's slot per the map as it is (not reloaded); nil before
    /// there is a map.
    func servingNodes(of keys: [String]) -> [String?] {
        keys.map { key in self.topology.map { _ in self.node(forSlot: ClusterSlot.slot(of: key)).address } }
    }

    /// The node (`host:port`) that last answered a command on each key's slot (`answeredBy`).
    func answeringNodes(of keys: [String]) -> [String?] {
        keys.map { self.answeredBy[ClusterSlot.slot(of: $0)] }
    }

    /// A node for commands that may go anywhere.
    var anyNode: Node {
        self.topology?.primaries.first ?? self.seed
    }

    /// What a redirect teaches about the map: MOVED patches one slot at once and, like CLUSTERDOWN,
    /// READONLY (a failover) and UNBLOCKED, makes the next call reload the whole map. ASK and TRYAGAIN
    /// change nothing.
    func learn(from redirect: ClusterRedirect) {
        switch redirect {
        case .moved(let slot, let node):
            self.topology?.assign(slot, to: node)
            self.refreshDue = true
        case .clusterDown, .readOnly, .unblocked:
            self.refreshDue = true
        case .ask, .tryAgain:
            break
        }
    }

    /// Loads the map with `CLUSTER SLOTS` from the seed or, failing that, any node of the last map.
    func refreshTopology() throws {
        var candidates = [self.seed]
        if let topology = self.topology {
            candidates += topology.primaries + topology.replicas
        }
        var tried: Set<String> = []
        var failures: [String] = []
        for node in candidates where tried.insert(node.address).inserted {
            do {
                let reply = try self.using(node) { try $0.execute([RedisCommand("CLUSTER", "SLOTS")]) }[0]
                if let message = reply.errorMessage {
                    failures.append("\(node): \(message)")
                    continue
                }
                let fresh = try ClusterTopology(slotsReply: reply, connectedHost: node.host)
                guard !fresh.ranges.isEmpty else {
                    failures.append("\(node): serves no slots")
                    continue
                }
                self.install(fresh, from: node)
                return
            } catch {
                failures.append("\(node): \(error)")
            }
        }
        throw RedisError(
            .connectionFailed,
            "no redis cluster node answered CLUSTER SLOTS: \(failures.joined(separator: "; "))"
        )
    }

    /// Replaces the map and closes connections to nodes that are no longer primaries.
    private func install(_ fresh: ClusterTopology, from node: Node) {
        let changed = self.topology?.ranges != fresh.ranges
        self.topology = fresh
        self.refreshDue = false
        let primaries = Set(fresh.primaries.map(\.address))
        for address in self.contexts.keys where !primaries.contains(address) {
            self.forget(address)
        }
        if changed {
            self.logger.debug(
                "redis cluster slots loaded",
                metadata: [
                    "redis.node": "\(node)", "redis.primaries": "\(fresh.primaries.map(\.address).joined(separator: ","))",
                ]
            )
        }
    }

    // MARK: - Round trips

    /// One round trip per node, overlapped: every node is connected first (a refusal fails the call
    /// before any node ran anything), then every part is written, then every part is read.
    func roundTrips(_ parts: [(node: Node, commands: [RedisCommand])]) throws -> [[RedisReply]] {
        if parts.count == 1 {
            return [try self.using(parts[0].node) { try $0.execute(parts[0].commands) }]
        }
        for part in parts {
            try self.using(part.node) { try $0.connect() }
        }
        let contexts = parts.map { self.context(for: $0.node) }
        var unread: [Int] = []
        do {
            for index in parts.indices {
                unread.append(index)
                try contexts[index].write(parts[index].commands)
            }
            var replies: [[RedisReply]] = []
            for index in parts.indices {
                replies.append(try contexts[index].read(count: parts[index].commands.count))
                unread.removeFirst()
            }
            return replies
        } catch {
            // A socket with replies still unread would answer later commands with them: drop it.
            for index in unread { self.forget(parts[index].node.address) }
            self.refreshDue = true
            throw error
        }
    }

    /// Runs `body` on `node`'s context. When the node fails (refused, reset, timed out) its context is
    /// dropped and the next call reloads the map first: a failover or a node leaving are the likely
    /// causes. The error is rethrown: like on a single node, a write may have run before the failure.
    func using<T>(_ node: Node, _ body: (any ClusterNodeConnection) throws -> T) throws -> T {
        do {
            return try body(self.context(for: node))
        } catch let error as RedisError where error.code != .invalidArgument && error.code != .closed {
            self.forget(node.address)
            self.refreshDue = true
            self.logger.debug("redis cluster node failed", metadata: ["redis.node": "\(node)", "error": "\(error)"])
            throw error
        }
    }

    /// The context of a node, created on first use; database 0, as a cluster has no other.
    private func context(for node: Node) -> any ClusterNodeConnection {
        if let context = self.contexts[node.address] { return context }
        var configuration = self.configuration
        configuration.host = node.host
        configuration.port = node.port
        configuration.database = 0
        configuration.cluster = false
        configuration.checksSlots = false
        let context: any ClusterNodeConnection =
            configuration.tls == nil
            ? HiredisContext(configuration: configuration, logger: self.logger)
            : EventLoopNodeConnection(configuration: configuration, logger: self.logger)
        self.contexts[node.address] = context
        return context
    }

    /// Closes a node's connection; a WATCH held on it is marked lost (the server released it).
    func forget(_ address: String) {
        self.contexts.removeValue(forKey: address)?.close()
        if self.watch?.node?.address == address {
            self.watch?.isLost = true
        }
    }

    // MARK: - Waiting

    func backoff() -> ClusterBackoff {
        ClusterBackoff(
            budgetMilliseconds: min(Self.maxBackoffMilliseconds, self.configuration.commandTimeoutMilliseconds)
        )
    }

    /// Blocks this (the connection's own) thread for the next backoff step; false once the budget is spent.
    func pause(_ backoff: inout ClusterBackoff) -> Bool {
        guard let milliseconds = backoff.next() else { return false }
        usleep(useconds_t(milliseconds * 1_000))
        return true
    }
}
