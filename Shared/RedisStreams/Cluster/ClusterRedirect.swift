/// An error reply that means "not here, not now": the command did not run, and sending it again to
/// the right node (or a moment later) will run it.
enum ClusterRedirect: Equatable {
    /// `-MOVED <slot> <host:port>`: the slot lives on another node for good; update the map.
    case moved(slot: Int, node: ClusterTopology.Node)
    /// `-ASK <slot> <host:port>`: the slot is being migrated and this key already left; ask the target
    /// once, with `ASKING` before the command, without changing the map.
    case ask(slot: Int, node: ClusterTopology.Node)
    /// `-TRYAGAIN`: a multi-key command met a slot mid-migration with its keys on both nodes; wait and resend.
    case tryAgain
    /// `-CLUSTERDOWN`: the cluster cannot serve the slot right now (a primary failed and its replica is
    /// not promoted yet, or nobody serves it); wait, reload the map, resend.
    case clusterDown
    /// `-READONLY`: the node became a replica in a failover; reload the map and resend to the new primary.
    case readOnly
    /// `-UNBLOCKED`: a blocked read was woken without data because its key left the node (migrating a
    /// stream deletes it on the source, which Redis 7 answers this way, not with MOVED) or the node
    /// became a replica. The read did nothing; reload the map and block again where the key is now.
    /// (An operator's `CLIENT UNBLOCK … ERROR` looks the same and is re-sent too: harmless for a read.)
    case unblocked

    /// The redirect an error reply carries; nil for every other reply. `from` is the node that answered:
    /// an empty host in `MOVED`/`ASK` means the host the client already reached that node at.
    init?(_ reply: RedisReply, from: ClusterTopology.Node) {
        guard case .error(let message) = reply else { return nil }
        let words = message.split(separator: " ", maxSplits: 3)
        guard let first = words.first else { return nil }
        switch first {
        case "MOVED", "ASK":
            guard words.count >= 3, let slot = Int(words[1]), let colon = words[2].lastIndex(of: ":"),
                let port = Int(words[2][words[2].index(after: colon)...])
            else { return nil }
            let host = words[2][..<colon]
            let node = ClusterTopology.Node(host: host.isEmpty ? from.host : String(host), port: port)
            self = first == "MOVED" ? .moved(slot: slot, node: node) : .ask(slot: slot, node: node)
        case "TRYAGAIN": self = .tryAgain
        case "CLUSTERDOWN": self = .clusterDown
        case "READONLY": self = .readOnly
        case "UNBLOCKED": self = .unblocked
        default: return nil
        }
    }
}

extension ClusterRedirect {
    /// TRYAGAIN and CLUSTERDOWN clear up with time, not with another node.
    var needsBackoff: Bool {
        switch self {
        case .tryAgain, .clusterDown: true
        default: false
        }
    }

    /// READONLY, CLUSTERDOWN and UNBLOCKED mean the map changed under us: reload it before resending.
    var reloadsNow: Bool {
        switch self {
        case .readOnly, .clusterDown, .unblocked: true
        default: false
        }
    }

    /// ASK: the key is mid-migration.
    var isAsk: Bool {
        if case .ask = self { true } else { false }
    }
}
