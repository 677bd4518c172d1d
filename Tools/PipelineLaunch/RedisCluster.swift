import Foundation
import Logging
import RedisStreams
import Synchronization

/// A real Redis Cluster of redis-server child processes on free loopback ports (six nodes by default:
/// three primaries, one replica each), each node in a directory of its own: for tests of cluster
/// routing, resharding and failover without mocks, and for the benchmark and fault runs
/// (`attribution-bench redis --cluster`).
///
/// Stopped by `stop()` or when the last reference goes away. Nodes run with a 1 s node timeout (a
/// failover takes 2–3 s), no replica migration (a replica stays with its primary, so which node takes
/// over is predictable) and a replica validity factor of 0 (a replica may always take over, however
/// long its link was down: no flaky refusals on a loaded machine).
public final class RedisCluster: Sendable {
    /// How a cluster is made.
    public struct Options: Sendable {
        /// Nodes in all: half of them primaries, each with one replica.
        public var nodes = 6
        /// Each node with an append-only file synced every second (what compose runs); none otherwise.
        public var appendOnly = false
        /// Each node with a loopback address of its own (127.0.0.21, .22, …: the cluster and its clients
        /// know it by that one, its connections to other nodes leave from it) besides 127.0.0.1, so that
        /// `cut(_:from:)` can drop what passes between chosen nodes while clients still reach every node.
        public var apart = false
        /// More of every node's command line (an ACL file, the replication user's login).
        public var arguments: [String] = []
        /// The user the launcher's own connections and `redis-cli` log in as, when ACLs are on.
        public var username: String?
        public var password: String?
        /// Where the nodes' directories go (kept on stop); a temporary one, removed on stop, if nil.
        public var directory: URL?
        /// TLS only (`--port 0 --tls-port`), between the nodes too (`tls-cluster`, `tls-replication`): the
        /// nodes' certificate (for 127.0.0.1), the CA, and the client certificate they then demand.
        public var tls: RedisServer.TLS?

        /// Six nodes, no persistence, all on 127.0.0.1, no ACLs, in a temporary directory.
        public init() {}
    }

    /// Every node's client port, in creation order; the first is the seed of `configuration`.
    public let ports: [Int]
    /// The address each node is known by in the cluster (127.0.0.1, or its own with `apart`).
    public let addresses: [Int: String]
    /// The nodes' directories' parent (a directory `<port>` per node: nodes.conf, AOF, log).
    public let directory: URL
    let options: Options
    let commands: [Int: [String]]
    let processes: Mutex<[Int: Process]>
    /// Replica port → primary port, as created and as replaced; what `waitForFailover(of:)` watches.
    let primaryOfReplica: Mutex<[Int: Int]>

    private init(ports: [Int], addresses: [Int: String], directory: URL, options: Options, commands: [Int: [String]]) {
        self.ports = ports
        self.addresses = addresses
        self.directory = directory
        self.options = options
        self.commands = commands
        self.processes = Mutex([:])
        self.primaryOfReplica = Mutex([:])
    }

    deinit {
        self.stop()
    }

    /// TLS only, when started with it (`Options.tls`).
    public var tls: RedisServer.TLS? { self.options.tls }

    /// Cluster mode, seeded with the first node.
    public var configuration: RedisConfiguration {
        var configuration = RedisConfiguration(host: self.addresses[self.ports[0]]!, port: self.ports[0], database: 0)
        configuration.cluster = true
        configuration.username = self.options.username
        configuration.password = self.options.password
        configuration.tls = self.options.tls?.clientConfiguration
        return configuration
    }

    /// A new cluster-mode connection (the caller closes it, or lets it go).
    public func connect(label: String = "test.redis-cluster") -> RedisConnection {
        RedisConnection(configuration: self.configuration, logger: .launch(label))
    }

    /// A plain single-node connection to one node, for looking at what that node itself holds.
    public func connect(port: Int, label: String = "test.redis-node") -> RedisConnection {
        var configuration = RedisConfiguration(host: "127.0.0.1", port: port)
        configuration.username = self.options.username
        configuration.password = self.options.password
        configuration.tls = self.options.tls?.clientConfiguration
        return RedisConnection(configuration: configuration, logger: .launch(label))
    }

    /// Starts the nodes, creates the cluster with `redis-cli --cluster create` and waits until every node
    /// says `cluster_state:ok`, all agree on the slots and every replica has synced; retries when a port
    /// was taken in the meantime.
    public static func start(_ options: Options = Options()) async throws -> RedisCluster {
        guard findExecutable("redis-server") != nil, findExecutable("redis-cli") != nil else {
            throw LaunchError(
                "redis-server and redis-cli must be on PATH (Debian: apt-get install redis-server redis-tools)"
            )
        }
        guard options.nodes >= 6, options.nodes % 2 == 0 else {
            throw LaunchError("a cluster needs an even number of nodes, at least 6 (3 primaries with a replica each)")
        }
        guard options.tls == nil || !options.apart else {
            throw LaunchError("a TLS cluster runs on 127.0.0.1, not apart (its certificate names that address)")
        }
        var lastError: any Error = LaunchError("redis cluster did not start")
        for _ in 0..<3 {
            let cluster: RedisCluster
            do {
                cluster = try await Self.launch(options)
            } catch {
                lastError = error
                continue
            }
            do {
                try await cluster.create()
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
            throw LaunchError("no node serves slot \(slot)")
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
        guard let id = reply.string else { throw LaunchError("CLUSTER MYID on \(port) answered \(reply)") }
        return id
    }

    // MARK: - Stopping

    /// Kills every node, waits for them to exit, removes the cuts of nodes run apart and the directory
    /// if it is the launcher's; safe to call more than once.
    public func stop() {
        let processes = self.processes.withLock { processes in
            defer { processes = [:] }
            return Array(processes.values)
        }
        for process in processes {
            Self.end(process, signal: SIGKILL)
        }
        if self.options.apart, !processes.isEmpty {
            Self.heal()
        }
        if self.options.directory == nil {
            try? FileManager.default.removeItem(at: self.directory)
        }
    }

    // MARK: - Internal

    var livePorts: [Int] {
        let live = self.processes.withLock { processes in Set(processes.filter { $0.value.isRunning }.keys) }
        return self.ports.filter(live.contains)
    }

    /// The directory of the node on `port`.
    func directory(of port: Int) -> URL {
        self.directory.appendingPathComponent(String(port), isDirectory: true)
    }

    private static func launch(_ options: Options) async throws -> RedisCluster {
        let ports = try Self.choosePorts(count: options.nodes)
        if options.apart {
            Self.heal()  // what an interrupted run left
        }
        let directory =
            options.directory
            ?? FileManager.default.temporaryDirectory
            .appendingPathComponent("redis-cluster-\(ports[0])-\(UUID().uuidString)", isDirectory: true)
        var addresses: [Int: String] = [:]
        var commands: [Int: [String]] = [:]
        for (index, port) in ports.enumerated() {
            let own = options.apart ? "127.0.0.\(21 + index)" : "127.0.0.1"
            addresses[port] = own
            // Protected mode takes only 127.0.0.1 for loopback; every address here is loopback still.
            let binding =
                options.apart
                ? ["--bind", own, "127.0.0.1", "--bind-source-addr", own, "--protected-mode", "no"]
                : ["--bind", "127.0.0.1"]
            let persistence = options.appendOnly ? ["--appendonly", "yes", "--appendfsync", "everysec"] : ["--appendonly", "no"]
            let home = directory.appendingPathComponent(String(port), isDirectory: true).path
            let listen =
                options.tls.map { ["--port", "0", "--tls-port", String(port)] + $0.serverArguments + ["--tls-cluster", "yes"] }
                ?? ["--port", String(port)]
            commands[port] =
                listen + binding + [
                    "--daemonize", "no", "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                    "--cluster-node-timeout", "1000", "--cluster-allow-replica-migration", "no",
                    "--cluster-replica-validity-factor", "0",
                    // A replica's first full sync starts at once instead of after the default 5 s delay, and
                    // CLUSTER SLOTS lists a replica only once its offset is non-zero: the primary's pings
                    // move it, every 10 s by default.
                    "--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0", "--repl-ping-replica-period", "1",
                    "--save", "",
                ] + persistence + ["--dir", home, "--logfile", "\(home)/redis.log"] + options.arguments
        }
        let cluster = RedisCluster(
            ports: ports, addresses: addresses, directory: directory, options: options, commands: commands)
        do {
            for port in ports {
                try cluster.run(port: port)
            }
            for port in ports where try await !cluster.answersPing(port: port, within: .seconds(10)) {
                let log = try? String(
                    contentsOf: cluster.directory(of: port).appendingPathComponent("redis.log"), encoding: .utf8)
                throw LaunchError("cluster node on port \(port) did not answer PING; its log:\n\((log ?? "").suffix(2_000))")
            }
        } catch {
            cluster.stop()
            throw error
        }
        return cluster
    }

    /// Starts (or starts again) the node on `port` with its command line, in its directory.
    func run(port: Int) throws {
        try FileManager.default.createDirectory(at: self.directory(of: port), withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = findExecutable("redis-server")
        process.arguments = self.commands[port]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.runWithDefaultSignalMask()
        self.processes.withLock { $0[port] = process }
    }

    /// `count` distinct free ports whose cluster bus ports (port + 10000) are free too.
    private static func choosePorts(count: Int) throws -> [Int] {
        var ports: [Int] = []
        var attempts = 0
        while ports.count < count {
            attempts += 1
            guard attempts < 500 else { throw LaunchError("no \(count) free loopback port pairs") }
            let port = try freeLoopbackPort()
            let taken = ports.contains { $0 == port || $0 + 10_000 == port || $0 == port + 10_000 }
            if !taken, loopbackPortIsFree(port + 10_000) {
                ports.append(port)
            }
        }
        return ports
    }

    /// Runs `redis-cli --cluster create` and waits until the cluster is fully up.
    private func create() async throws {
        let nodes = self.ports.map { "\(self.addresses[$0]!):\($0)" }
        let created = try await self.redisCLI(
            ["--cluster", "create"] + nodes + ["--cluster-replicas", "1", "--cluster-yes"], within: .seconds(30))
        guard created.status == 0 else {
            throw LaunchError("redis-cli --cluster create failed (\(created.status)):\n\(created.output.suffix(2_000))")
        }
        let ready = try await eventually(timeout: .seconds(20), every: .milliseconds(50)) {
            (try? await self.isReady()) ?? false
        }
        guard ready else { throw LaunchError("redis cluster on \(self.ports) did not become ready in 20 s") }
        let replicaLinks = try await self.replicaLinks()
        self.primaryOfReplica.withLock { $0 = replicaLinks }
    }

    /// Every node says `cluster_state:ok`, all report the same primaries (half the nodes) with one
    /// replica each over all 16384 slots, and every replica has synced with its primary.
    private func isReady() async throws -> Bool {
        var reference: [String]?
        for port in self.ports {
            guard try await self.clusterState(on: port) == "ok" else { return false }
            let topology = try await self.topology(asking: port)
            let summary = topology.ranges.map {
                "\($0.slots) \($0.primary.port) \($0.replicas.map(\.port).sorted())"
            }.sorted()
            let covered = topology.ranges.reduce(0) { $0 + $1.slots.count }
            guard covered == ClusterSlot.count, topology.primaries.count == self.ports.count / 2,
                topology.ranges.allSatisfy({ $0.replicas.count == 1 })
            else { return false }
            if reference == nil { reference = summary }
            guard summary == reference else { return false }
        }
        for port in try await self.replicas {
            guard try await self.info("replication", on: port).contains("master_link_status:up") else { return false }
        }
        return true
    }

    /// Replica port → primary port, from the live replicas' `INFO replication`.
    func replicaLinks() async throws -> [Int: Int] {
        var links: [Int: Int] = [:]
        for port in self.livePorts {
            let info = try await self.info("replication", on: port)
            guard info.contains("role:slave") else { continue }
            guard let line = info.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("master_port:") }),
                let primary = Int(line.dropFirst("master_port:".count))
            else { throw LaunchError("replica \(port) reports no master_port") }
            links[port] = primary
        }
        return links
    }

    func clusterState(on port: Int) async throws -> String? {
        let info = try await self.command(RedisCommand("CLUSTER", "INFO"), on: port).string ?? ""
        let line = info.split(whereSeparator: \.isNewline).first { $0.hasPrefix("cluster_state:") }
        return line.map { String($0.dropFirst("cluster_state:".count)) }
    }

    /// `INFO <section>` of one node.
    func info(_ section: String, on port: Int) async throws -> String {
        try await self.command(RedisCommand("INFO", section), on: port).string ?? ""
    }

    func topology(asking port: Int) async throws -> ClusterTopology {
        try ClusterTopology(
            slotsReply: try await self.command(RedisCommand("CLUSTER", "SLOTS"), on: port),
            connectedHost: "127.0.0.1"
        )
    }

    /// One command on a short-lived single-node connection; an error reply is thrown.
    func command(_ command: RedisCommand, on port: Int) async throws -> RedisReply {
        let connection = self.connect(port: port, label: "launch.redis-cluster.admin")
        do {
            let reply = try await connection.send(command)
            await connection.close()
            return reply
        } catch {
            await connection.close()
            throw error
        }
    }

    /// `redis-cli ARGS` to its end (as the cluster's user, the password in its environment rather than
    /// on its command line), killed after `timeout`; its exit status and both outputs together.
    func redisCLI(_ arguments: [String], within timeout: Duration) async throws -> (status: Int32, output: String) {
        let output = self.directory.appendingPathComponent("redis-cli-\(UUID().uuidString).log")
        try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: output) }
        let process = Process()
        process.executableURL = findExecutable("redis-cli")
        var login: [String] = []
        if let password = self.options.password {
            process.environment = ProcessInfo.processInfo.environment.merging(["REDISCLI_AUTH": password]) { $1 }
            login = (self.options.username.map { ["--user", $0] } ?? []) + ["--no-auth-warning"]
        }
        process.arguments = login + (self.options.tls?.cliArguments ?? []) + arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: output)
        process.standardError = process.standardOutput
        try process.runWithDefaultSignalMask()
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            guard ContinuousClock.now < deadline else {
                Self.end(process, signal: SIGKILL)
                throw LaunchError("redis-cli \(arguments.prefix(2).joined(separator: " ")) did not finish in \(timeout)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return (process.terminationStatus, (try? String(contentsOf: output, encoding: .utf8)) ?? "")
    }

    /// Polls PING until the node answers, its process exits, or time runs out.
    func answersPing(port: Int, within timeout: Duration) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline, self.processes.withLock({ $0[port]?.isRunning ?? false }) {
            if (try? await self.command(RedisCommand("PING"), on: port)) == .status("PONG") { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    /// Signals a process and polls for its exit (never `waitUntilExit`, which spins a run loop).
    static func end(_ process: Process, signal: Int32) {
        guard process.isRunning else { return }
        _ = Foundation.kill(process.processIdentifier, signal)
        let deadline = ContinuousClock.now + .seconds(5)
        while process.isRunning, ContinuousClock.now < deadline {
            usleep(2_000)
        }
    }
}
