/// Which node serves which hash slot, as one node reported it with `CLUSTER SLOTS`.
///
/// A snapshot: the router replaces it after a `MOVED`, a failover or an I/O error, and patches single
/// slots from `MOVED` replies in between (`assign(_:to:)`).
public struct ClusterTopology: Sendable, Equatable {
    /// One node's address, as the cluster announces it.
    public struct Node: Sendable, Hashable, CustomStringConvertible {
        /// Host name or IP address (IPv6 without brackets).
        public var host: String
        /// Client port (the cluster bus listens on port + 10000).
        public var port: Int
        /// The node's 40-character id; nil when learnt from a redirect, which carries only the address.
        public var id: String?

        /// A node address.
        public init(host: String, port: Int, id: String? = nil) {
            self.host = host
            self.port = port
            self.id = id
        }

        /// `host:port`, the key under which the router keeps the node's connection.
        public var address: String { "\(self.host):\(self.port)" }

        /// `host:port`.
        public var description: String { self.address }
    }

    /// A range of slots with the primary serving it and that primary's replicas.
    public struct SlotRange: Sendable, Equatable {
        /// The slots, both ends included.
        public var slots: ClosedRange<Int>
        /// The node that serves reads and writes for these slots.
        public var primary: Node
        /// Nodes replicating the primary; one of them takes over when it fails.
        public var replicas: [Node]

        /// A range from its parts.
        public init(slots: ClosedRange<Int>, primary: Node, replicas: [Node] = []) {
            self.slots = slots
            self.primary = primary
            self.replicas = replicas
        }
    }

    /// The ranges in the order the node listed them.
    public private(set) var ranges: [SlotRange]
    /// Every primary, once, in order of first appearance.
    public private(set) var primaries: [Node]
    /// `owners[slot]` indexes `primaries`; -1 for a slot no node serves.
    private var owners: [Int16]

    /// A topology from its ranges (for tests and for nodes learnt another way).
    public init(ranges: [SlotRange]) {
        self.ranges = ranges
        self.primaries = []
        self.owners = Array(repeating: -1, count: ClusterSlot.count)
        for range in ranges {
            let clamped = range.slots.clamped(to: 0...(ClusterSlot.count - 1))
            let index = self.index(of: range.primary)
            for slot in clamped { self.owners[slot] = index }
        }
    }

    /// Parses a `CLUSTER SLOTS` reply: `[[start, end, [host, port, id?, metadata?], replica…], …]`.
    ///
    /// `connectedHost` replaces an empty host, which Redis sends to mean "the address you reached me
    /// at" (a node that does not know its own address). A node whose endpoint is `?` (unknown) is
    /// left out; a range whose primary is unknown is left unserved, so commands to it go to any node
    /// and come back redirected.
    public init(slotsReply reply: RedisReply, connectedHost: String) throws {
        guard case .array(let entries) = reply else {
            throw RedisError(.unexpectedReply, "CLUSTER SLOTS answered \(reply)")
        }
        var ranges: [SlotRange] = []
        for entry in entries {
            let parts = entry.elements
            guard parts.count >= 3, let start = parts[0].int, let end = parts[1].int, start <= end,
                start >= 0, end < Int64(ClusterSlot.count)
            else {
                throw RedisError(.unexpectedReply, "CLUSTER SLOTS entry has no slot range: \(entry)")
            }
            let nodes = try parts[2...].map { try Self.node(from: $0, connectedHost: connectedHost) }
            guard let primary = nodes[0] else { continue }
            ranges.append(
                SlotRange(slots: Int(start)...Int(end), primary: primary, replicas: nodes.dropFirst().compactMap { $0 })
            )
        }
        self.init(ranges: ranges)
    }

    /// The primary serving `slot`; nil when no node does (or the slot is out of range).
    public func node(forSlot slot: Int) -> Node? {
        guard self.owners.indices.contains(slot) else { return nil }
        let index = self.owners[slot]
        return index >= 0 ? self.primaries[Int(index)] : nil
    }

    /// Every replica, once.
    public var replicas: [Node] {
        var seen: Set<String> = []
        return self.ranges.flatMap(\.replicas).filter { seen.insert($0.address).inserted }
    }

    /// Records that `slot` is now served by `node`, as a `MOVED` reply says, until the next full reload.
    mutating func assign(_ slot: Int, to node: Node) {
        guard self.owners.indices.contains(slot) else { return }
        self.owners[slot] = self.index(of: node)
    }

    /// The index of `node` in `primaries` (by address), appending it if new.
    private mutating func index(of node: Node) -> Int16 {
        if let existing = self.primaries.firstIndex(where: { $0.address == node.address }) {
            return Int16(existing)
        }
        self.primaries.append(node)
        return Int16(self.primaries.count - 1)
    }

    private static func node(from reply: RedisReply, connectedHost: String) throws -> Node? {
        let fields = reply.elements
        guard fields.count >= 2, let host = fields[0].string, let port = fields[1].int, (1...65_535).contains(port)
        else {
            throw RedisError(.unexpectedReply, "CLUSTER SLOTS node is not [host, port, …]: \(reply)")
        }
        if host == "?" { return nil }
        let id = fields.count >= 3 ? fields[2].string : nil
        return Node(host: host.isEmpty ? connectedHost : host, port: Int(port), id: id)
    }
}
