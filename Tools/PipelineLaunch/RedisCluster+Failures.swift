import Foundation
import RedisStreams

/// What a cluster's operators and its failures do to it: a node killed, a replica taking over, a failed
/// node replaced, slots moved, nodes cut off from each other.
extension RedisCluster {
    /// One node as `CLUSTER NODES` lists it.
    public struct Node: Sendable, Codable, Equatable {
        /// Its client port.
        public var port: Int
        /// "primary" or "replica".
        public var role: String
        /// Its 40-character id.
        public var id: String
        /// For a replica, the id of the primary it follows.
        public var primary: String?
        /// The slot ranges it serves, both ends included (none for a replica).
        public var slots: [[Int]]
    }

    /// SIGKILL, like a crash or an OOM kill: the node vanishes without a goodbye to clients or peers.
    public func kill(port: Int) {
        guard let process = self.processes.withLock({ $0.removeValue(forKey: port) }) else { return }
        Self.end(process, signal: SIGKILL)
    }

    /// Waits until a replica of the killed primary `port` has taken over its slots and every live node
    /// says `cluster_state:ok` again; returns the new primary's port.
    public func waitForFailover(of port: Int, within timeout: Duration = .seconds(15)) async throws -> Int {
        let candidates = self.primaryOfReplica.withLock { map in map.filter { $0.value == port }.map(\.key) }
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let promoted = try? await self.promotedReplica(among: candidates, replacing: port) {
                self.primaryOfReplica.withLock { $0[promoted] = nil }
                return promoted
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw LaunchError("no replica of \(port) (\(candidates)) took over within \(timeout)")
    }

    /// SIGKILL of a primary that serves slots and has a replica in sync, then waits for the failover:
    /// (the killed primary's port, the replica that took over).
    public func failOver(within timeout: Duration = .seconds(30)) async throws -> (killed: Int, promoted: Int) {
        let links = try await self.replicaLinks()
        self.primaryOfReplica.withLock { $0 = links }
        guard let victim = try await self.primaries.first(where: { links.values.contains($0) }) else {
            throw LaunchError("no primary with a replica to fail over (replicas: \(links))")
        }
        self.kill(port: victim)
        return (victim, try await self.waitForFailover(of: victim, within: timeout))
    }

    /// Brings a killed node back the way an operator replaces a failed primary: as a new, empty node on
    /// the same port (its directory cleared, so a new node id) that every node is told to forget the old
    /// id of, meets the cluster and replicates the primary that replaced it.
    ///
    /// Not restarted with its old nodes.conf: on Redis before 7.2.4 that can lose a partition. A node
    /// keeps, per slot, a flag "its owner stopped claiming it", and reassigning the slot does not clear
    /// it (fixed by redis/redis#12564). A replica that saw a stale message during a resharding keeps the
    /// flag on the last migrated slot; promoted, it owns the slot with the flag still set, so the old
    /// primary coming back and claiming the slot at its older epoch wins it, the new primary deletes the
    /// slot's keys, and the slot ends unassigned once the old primary turns replica.
    public func replace(port: Int) async throws {
        guard let survivor = self.livePorts.first(where: { $0 != port }) else { throw LaunchError("no live node left") }
        let address = "\(self.addresses[port]!):\(port)@"
        let oldID = try await self.clusterNodes(asking: survivor).split(whereSeparator: \.isNewline)
            .first { $0.contains(address) && !$0.contains("handshake") }?.split(separator: " ").first.map(String.init)
        let orphan = try await self.orphanPrimary(asking: survivor)
        self.kill(port: port)
        try? FileManager.default.removeItem(at: self.directory(of: port))
        try self.run(port: port)
        guard try await self.answersPing(port: port, within: .seconds(10)) else {
            throw LaunchError("the new node on \(port) did not answer PING")
        }
        if let oldID {
            // Every node, before any gossip could bring the old id back (FORGET bans it for 60 s).
            for other in self.livePorts where other != port {
                _ = try? await self.command(RedisCommand("CLUSTER", "FORGET", oldID), on: other)
            }
        }
        _ = try await self.command(
            RedisCommand("CLUSTER", "MEET", self.addresses[survivor]!, String(survivor)), on: port)
        // REPLICATE succeeds once the new node has heard of the primary.
        let replicating = try await eventually(timeout: .seconds(30), every: .milliseconds(100)) {
            (try? await self.command(RedisCommand("CLUSTER", "REPLICATE", orphan.id), on: port)) == .status("OK")
        }
        guard replicating else { throw LaunchError("node \(port) could not replicate \(orphan.id)") }
        let linked = try await eventually(timeout: .seconds(30), every: .milliseconds(100)) {
            let info = (try? await self.info("replication", on: port)) ?? ""
            return info.contains("role:slave") && info.contains("master_link_status:up")
        }
        guard linked else { throw LaunchError("node \(port) did not rejoin as a replica") }
        self.primaryOfReplica.withLock { $0[port] = orphan.port }
        try await self.waitUntilHealthy()
    }

    /// Until every live node says `cluster_state:ok` and every live replica's link to its primary is up.
    public func waitUntilHealthy(within timeout: Duration = .seconds(30)) async throws {
        let healthy = try await eventually(timeout: timeout, every: .milliseconds(100)) {
            for port in self.livePorts {
                guard (try? await self.clusterState(on: port)) == "ok" else { return false }
                let info = (try? await self.info("replication", on: port)) ?? ""
                guard info.contains("role:master") || info.contains("master_link_status:up") else { return false }
            }
            return true
        }
        guard healthy else {
            var views: [String] = []
            for port in self.livePorts { views.append("\(port): \((try? await self.clusterNodes(asking: port)) ?? "-")") }
            throw LaunchError("the cluster was not healthy within \(timeout); views:\n\(views.joined(separator: "\n"))")
        }
    }

    /// Every node that answers and is not failed, as the first live node lists them.
    public func nodes() async throws -> [Node] {
        for port in self.livePorts {
            guard let text = try? await self.clusterNodes(asking: port) else { continue }
            return text.split(whereSeparator: \.isNewline).compactMap { line in
                let fields = line.split(separator: " ").map(String.init)
                guard fields.count >= 8, !fields[2].contains("fail"), !fields[2].contains("noaddr"),
                    let port = fields[1].split(separator: "@").first?.split(separator: ":").last.flatMap({ Int($0) })
                else { return nil }
                let replica = fields[2].contains("slave")
                let slots = fields.dropFirst(8).filter { !$0.hasPrefix("[") }.compactMap { range -> [Int]? in
                    let ends = range.split(separator: "-").compactMap { Int($0) }
                    return ends.isEmpty ? nil : [ends[0], ends.last!]
                }
                return Node(
                    port: port, role: replica ? "replica" : "primary", id: fields[0],
                    primary: replica ? fields[3] : nil, slots: slots)
            }
        }
        throw LaunchError("no node answered CLUSTER NODES")
    }

    /// Moves `slots` slots from primary `source` to primary `target` with `redis-cli --cluster reshard`
    /// (MIGRATING/IMPORTING and MIGRATE of every key). Before, until the nodes agree on the slots
    /// (redis-cli refuses to reshard otherwise, and says so with exit status 0); after, until every
    /// node, replicas included, agrees who owns each slot: a failover of the target before its replica
    /// has heard of the moved slots would leave them unserved.
    public func reshard(slots: Int, from source: Int, to target: Int) async throws {
        try await self.waitForAgreement(asking: source)
        let targetID = try await self.nodeID(port: target)
        let owned = try await self.slotOwners(asking: target)[targetID, default: 0]
        let moved = try await self.redisCLI(
            [
                "--cluster", "reshard", "127.0.0.1:\(source)", "--cluster-from", try await self.nodeID(port: source),
                "--cluster-to", try await self.nodeID(port: target), "--cluster-slots", String(slots), "--cluster-yes",
                "--cluster-pipeline", "100",
            ], within: .seconds(300))
        guard moved.status == 0, moved.output.contains("Moving slot") else {
            throw LaunchError("redis-cli --cluster reshard failed:\n\(moved.output.suffix(2_000))")
        }
        try await self.waitForAgreement(asking: target)
        // redis-cli's check can pass while a node that just rejoined still lists the slots where they
        // were: until every live node's own view has the target owning the moved slots.
        var views: [Int: [String: Int]] = [:]
        let seen = try await eventually(timeout: .seconds(30), every: .milliseconds(50)) {
            views = [:]
            for port in self.livePorts { views[port] = try? await self.slotOwners(asking: port) }
            let first = views.values.first
            return views.count == self.livePorts.count && views.values.allSatisfy { $0 == first }
                && first?[targetID, default: 0] == owned + slots
        }
        guard seen else {
            throw LaunchError(
                "the nodes did not all see \(slots) slots moved to \(target) (it had \(owned)); slots per node id as each port sees them: \(views)"
            )
        }
    }

    /// How many slots each primary serves, by node id, as node `port` sees the cluster.
    private func slotOwners(asking port: Int) async throws -> [String: Int] {
        var owners: [String: Int] = [:]
        for line in try await self.clusterNodes(asking: port).split(whereSeparator: \.isNewline) {
            let fields = line.split(separator: " ")
            guard fields.count > 8 else { continue }
            owners[String(fields[0])] = fields.dropFirst(8).filter { !$0.hasPrefix("[") }.reduce(0) { count, range in
                let ends = range.split(separator: "-").compactMap { Int($0) }
                return count + (ends.isEmpty ? 0 : ends.last! - ends[0] + 1)
            }
        }
        return owners
    }

    /// Until `redis-cli --cluster check` says every node agrees on the slots and all are covered.
    private func waitForAgreement(asking port: Int) async throws {
        var check = ""
        let agreed = try await eventually(timeout: .seconds(30), every: .milliseconds(100)) {
            check =
                (try? await self.redisCLI(["--cluster", "check", "127.0.0.1:\(port)"], within: .seconds(30)))?
                .output ?? ""
            return check.contains("All nodes agree about slots configuration") && check.contains("All 16384 slots covered")
        }
        guard agreed else { throw LaunchError("the nodes did not agree on the slots:\n\(check.suffix(2_000))") }
    }

    // MARK: - Private

    private func clusterNodes(asking port: Int) async throws -> String {
        guard let text = try await self.command(RedisCommand("CLUSTER", "NODES"), on: port).string else {
            throw LaunchError("CLUSTER NODES on \(port) answered no text")
        }
        return text
    }

    /// The primary serving slots with no replica (the one promoted), as node `port` sees it; asked again
    /// until exactly one shows (a node's view can briefly mark a healthy one `fail?`).
    private func orphanPrimary(asking port: Int) async throws -> (id: String, port: Int) {
        var orphans: [(id: String, port: Int)] = []
        let found = try await eventually(timeout: .seconds(10), every: .milliseconds(100)) {
            let rows = ((try? await self.clusterNodes(asking: port)) ?? "").split(whereSeparator: \.isNewline)
                .map { $0.split(separator: " ").map(String.init) }.filter { $0.count >= 8 }
            let flags = Dictionary(rows.map { ($0[0], Set($0[2].split(separator: ",").map(String.init))) }) { $1 }
            let followed = Set(rows.filter { flags[$0[0]]!.contains("slave") }.map { $0[3] })
            orphans = rows.filter { fields in
                let own = flags[fields[0]]!
                return own.contains("master") && own.isDisjoint(with: ["fail", "fail?"]) && fields.count > 8
                    && !followed.contains(fields[0])
            }.compactMap { fields in
                fields[1].split(separator: "@").first?.split(separator: ":").last.flatMap { Int($0) }.map { (fields[0], $0) }
            }
            return orphans.count == 1
        }
        guard found else { throw LaunchError("expected one primary without a replica, found \(orphans.map(\.port))") }
        return orphans[0]
    }

    /// A candidate that now serves slots while `dead` serves none, per every live node, all `ok`.
    private func promotedReplica(among candidates: [Int], replacing dead: Int) async throws -> Int? {
        var promoted: Int?
        for port in self.livePorts {
            guard try await self.clusterState(on: port) == "ok" else { return nil }
            let primaries = try await self.topology(asking: port).primaries.map(\.port)
            guard !primaries.contains(dead), let candidate = candidates.first(where: primaries.contains) else {
                return nil
            }
            guard promoted == nil || promoted == candidate else { return nil }
            promoted = candidate
        }
        return promoted
    }
}
