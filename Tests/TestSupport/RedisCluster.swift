import Foundation
import Logging
import RedisStreams
import Synchronization

/// A real six-node Redis Cluster (three primaries, one replica each) of redis-server child processes on
/// free loopback ports, sharing one temporary directory; for tests of cluster routing, resharding and
/// failover without mocks.
///
/// Stopped by `stop()` or when the last reference goes away. Nodes run with a 1 s node timeout (a
/// failover takes 2–3 s), no persistence, no replica migration (a replica stays with its primary, so
/// which node takes over is predictable) and a replica validity factor of 0 (a replica may always
/// take over, however long its link was down: no flaky refusals on a loaded machine).
public final class RedisCluster: Sendable {
    /// Every node's client port, in creation order; the first is the seed of `configuration`.
    public let ports: [Int]
    /// The nodes' working directory (nodes-<port>.conf, logs); removed on stop.
    public let directory: URL
    private let processes: Mutex<[Int: Process]>
    /// Replica port → primary port, as created; what `waitForFailover(of:)` watches.
    private let primaryOfReplica: Mutex<[Int: Int]>

    private init(ports: [Int], directory: URL, processes: consuming sending [Int: Process]) {
        self.ports = ports
        self.directory = directory
        self.processes = Mutex(processes)
        self.primaryOfReplica = Mutex([:])
    }

    deinit {
        self.stop()
    }

    /// Cluster mode, seeded with the first node.
    public var configuration: RedisConfiguration {
        var configuration = RedisConfiguration(host: "127.0.0.1", port: self.ports[0], database: 0)
        configuration.cluster = true
        return configuration
    }

    /// A new cluster-mode connection (the caller closes it, or lets it go).
    public func connect(label: String = "test.redis-cluster") -> RedisConnection {
        RedisConnection(configuration: self.configuration, logger: .test(label))
    }

    /// A plain single-node connection to one node, for looking at what that node itself holds.
    public func connect(port: Int, label: String = "test.redis-node") -> RedisConnection {
        RedisConnection(configuration: RedisConfiguration(host: "127.0.0.1", port: port), logger: .test(label))
    }

    /// Starts six nodes, creates the cluster with `redis-cli --cluster create` and waits until every node
    /// says `cluster_state:ok`, all agree on the slots and every replica has synced; retries when a port
    /// was taken in the meantime.
    public static func start() async throws -> RedisCluster {
        guard let server = findExecutable("redis-server"), let cli = findExecutable("redis-cli") else {
            throw TestSupportError(
                "redis-server and redis-cli must be on PATH (Debian: apt-get install redis-server redis-tools)"
            )
        }
        var lastError: any Error = TestSupportError("redis cluster did not start")
        for _ in 0..<3 {
            let cluster: RedisCluster
            do {
                cluster = try await Self.launch(server: server)
            } catch {
                lastError = error
                continue
            }
            do {
                try await cluster.create(cli: cli)
                return cluster
            } catch {
                cluster.stop()
                lastError = error
            }
        }
        throw lastError
    }

    // MARK: - Topology

    /// The ports of the nodes serving slots now, by first slot.
    public var primaries: [Int] {
        get async throws { try await self.topology().primaries.map(\.port) }
    }

    /// The ports of the replicas now.
    public var replicas: [Int] {
        get async throws { try await self.topology().replicas.map(\.port) }
    }

    /// The port of the primary serving `slot` now.
    public func owner(ofSlot slot: Int) async throws -> Int {
        guard let node = try await self.topology().node(forSlot: slot) else {
            throw TestSupportError("no node serves slot \(slot)")
        }
        return node.port
    }

    /// The map as a live node reports it with `CLUSTER SLOTS`.
    public func topology() async throws -> ClusterTopology {
        try await self.topology(asking: self.livePorts[0])
    }

    /// The 40-character id of a node (`CLUSTER MYID`).
    public func nodeID(port: Int) async throws -> String {
        let reply = try await self.command(RedisCommand("CLUSTER", "MYID"), on: port)
        guard let id = reply.string else { throw TestSupportError("CLUSTER MYID on \(port) answered \(reply)") }
        return id
    }

    // MARK: - Failures

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
        throw TestSupportError("no replica of \(port) (\(candidates)) took over within \(timeout)")
    }

    // MARK: - Stopping

    /// Kills every node, waits for them to exit and removes the directory; safe to call more than once.
    public func stop() {
        let processes = self.processes.withLock { processes in
            defer { processes = [:] }
            return Array(processes.values)
        }
        for process in processes {
            Self.end(process, signal: SIGKILL)
        }
        try? FileManager.default.removeItem(at: self.directory)
    }

    // MARK: - Private

    private var livePorts: [Int] {
        let live = self.processes.withLock { processes in Set(processes.filter { $0.value.isRunning }.keys) }
        return self.ports.filter(live.contains)
    }

    private static func launch(server: URL) async throws -> RedisCluster {
        let ports = try Self.choosePorts(count: 6)
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("redis-cluster-\(ports[0])-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)

        var processes: [Int: Process] = [:]
        for port in ports {
            let process = Process()
            process.executableURL = server
            process.arguments = [
                "--port", String(port), "--bind", "127.0.0.1", "--daemonize", "no",
                "--cluster-enabled", "yes", "--cluster-config-file", "\(directory.path)/nodes-\(port).conf",
                "--cluster-node-timeout", "1000", "--cluster-allow-replica-migration", "no",
                "--cluster-replica-validity-factor", "0",
                // A replica's first full sync starts at once instead of after the default 5 s delay, and
                // CLUSTER SLOTS lists a replica only once its offset is non-zero: the primary's pings
                // move it, every 10 s by default.
                "--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0", "--repl-ping-replica-period", "1",
                "--save", "", "--appendonly", "no", "--dir", directory.path,
                "--logfile", "\(directory.path)/redis-\(port).log",
            ]
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            do {
                try process.runWithDefaultSignalMask()
            } catch {
                for started in processes.values { Self.end(started, signal: SIGKILL) }
                try? FileManager.default.removeItem(at: directory)
                throw error
            }
            processes[port] = process
        }
        let cluster = RedisCluster(ports: ports, directory: directory, processes: processes)
        for port in ports {
            if try await cluster.answersPing(port: port, within: .seconds(10)) { continue }
            let log = (try? String(contentsOf: directory.appendingPathComponent("redis-\(port).log"), encoding: .utf8))
            cluster.stop()
            throw TestSupportError("cluster node on port \(port) did not answer PING; its log:\n\((log ?? "").suffix(2_000))")
        }
        return cluster
    }

    /// `count` distinct free ports whose cluster bus ports (port + 10000) are free too.
    private static func choosePorts(count: Int) throws -> [Int] {
        var ports: [Int] = []
        var attempts = 0
        while ports.count < count {
            attempts += 1
            guard attempts < 500 else { throw TestSupportError("no \(count) free loopback port pairs") }
            let port = try freeLoopbackPort()
            let taken = ports.contains { $0 == port || $0 + 10_000 == port || $0 == port + 10_000 }
            if !taken, loopbackPortIsFree(port + 10_000) {
                ports.append(port)
            }
        }
        return ports
    }

    /// Runs `redis-cli --cluster create` and waits until the cluster is fully up.
    private func create(cli: URL) async throws {
        let output = self.directory.appendingPathComponent("cluster-create.log")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let process = Process()
        process.executableURL = cli
        process.arguments =
            ["--cluster", "create"] + self.ports.map { "127.0.0.1:\($0)" } + ["--cluster-replicas", "1", "--cluster-yes"]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: output)
        process.standardError = process.standardOutput
        try process.runWithDefaultSignalMask()
        let deadline = ContinuousClock.now + .seconds(30)
        while process.isRunning {
            guard ContinuousClock.now < deadline else {
                Self.end(process, signal: SIGKILL)
                throw TestSupportError("redis-cli --cluster create did not finish in 30 s")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        guard process.terminationStatus == 0 else {
            let log = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            throw TestSupportError("redis-cli --cluster create failed (\(process.terminationStatus)):\n\(log.suffix(2_000))")
        }
        let ready = try await eventually(timeout: .seconds(20), every: .milliseconds(50)) {
            (try? await self.isReady()) ?? false
        }
        guard ready else { throw TestSupportError("redis cluster on \(self.ports) did not become ready in 20 s") }
        let replicaLinks = try await self.replicaLinks()
        self.primaryOfReplica.withLock { $0 = replicaLinks }
    }

    /// Every node says `cluster_state:ok`, all report the same three primaries with one replica each
    /// over all 16384 slots, and every replica has synced with its primary.
    private func isReady() async throws -> Bool {
        var reference: [String]?
        for port in self.ports {
            guard try await self.clusterState(on: port) == "ok" else { return false }
            let topology = try await self.topology(asking: port)
            let summary = topology.ranges.map {
                "\($0.slots) \($0.primary.port) \($0.replicas.map(\.port).sorted())"
            }.sorted()
            let covered = topology.ranges.reduce(0) { $0 + $1.slots.count }
            guard covered == ClusterSlot.count, topology.primaries.count == 3,
                topology.ranges.allSatisfy({ $0.replicas.count == 1 })
            else { return false }
            if reference == nil { reference = summary }
            guard summary == reference else { return false }
        }
        for port in try await self.replicas {
            let info = try await self.command(RedisCommand("INFO", "replication"), on: port).string ?? ""
            guard info.contains("master_link_status:up") else { return false }
        }
        return true
    }

    /// Replica port → primary port, from the replicas' `INFO replication`.
    private func replicaLinks() async throws -> [Int: Int] {
        var links: [Int: Int] = [:]
        for port in try await self.replicas {
            let info = try await self.command(RedisCommand("INFO", "replication"), on: port).string ?? ""
            guard let line = info.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("master_port:") }),
                let primary = Int(line.dropFirst("master_port:".count))
            else { throw TestSupportError("replica \(port) reports no master_port") }
            links[port] = primary
        }
        return links
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

    private func clusterState(on port: Int) async throws -> String? {
        let info = try await self.command(RedisCommand("CLUSTER", "INFO"), on: port).string ?? ""
        let line = info.split(whereSeparator: \.isNewline).first { $0.hasPrefix("cluster_state:") }
        return line.map { String($0.dropFirst("cluster_state:".count)) }
    }

    private func topology(asking port: Int) async throws -> ClusterTopology {
        try ClusterTopology(
            slotsReply: try await self.command(RedisCommand("CLUSTER", "SLOTS"), on: port),
            connectedHost: "127.0.0.1"
        )
    }

    /// One command on a short-lived single-node connection; an error reply is thrown.
    func command(_ command: RedisCommand, on port: Int) async throws -> RedisReply {
        let connection = self.connect(port: port, label: "test.redis-cluster.admin")
        do {
            let reply = try await connection.send(command)
            await connection.close()
            return reply
        } catch {
            await connection.close()
            throw error
        }
    }

    /// Polls PING until the node answers, its process exits, or time runs out.
    private func answersPing(port: Int, within timeout: Duration) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline, self.processes.withLock({ $0[port]?.isRunning ?? false }) {
            if (try? await self.command(RedisCommand("PING"), on: port)) == .status("PONG") { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    /// Signals a node and polls for its exit (never `waitUntilExit`, which spins a run loop).
    private static func end(_ process: Process, signal: Int32) {
        guard process.isRunning else { return }
        _ = Foundation.kill(process.processIdentifier, signal)
        let deadline = ContinuousClock.now + .seconds(5)
        while process.isRunning, ContinuousClock.now < deadline {
            usleep(2_000)
        }
    }

}
