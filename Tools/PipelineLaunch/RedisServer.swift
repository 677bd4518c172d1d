import Foundation
import Logging
import RedisStreams
import Synchronization
import TLSClient

/// A real redis-server child process on a free loopback port (or the one asked for), with a directory
/// of its own: the tests' Redis, and the benchmark and fault runs' (`attribution-bench redis`).
///
/// Stopped by `stop()` or when the last reference goes away, so a test suite instance owning one gets a
/// fresh, isolated server per test. A directory the launcher made is removed on stop; one it was given
/// is kept (a run's logs and append-only file stay for reading).
public final class RedisServer: Sendable {
    /// A TLS-only server: its certificate, the CA its clients trust (and that signs theirs), and, when it
    /// demands client certificates (`tls-auth-clients yes`), the one its own connections present.
    public struct TLS: Sendable {
        public var server: TestCertificates.Pair
        public var ca: String
        public var client: TestCertificates.Pair?

        public init(server: TestCertificates.Pair, ca: String, client: TestCertificates.Pair? = nil) {
            self.server = server
            self.ca = ca
            self.client = client
        }

        /// What its clients trust and present.
        public var clientConfiguration: TLSClientConfiguration {
            TLSClientConfiguration(
                trustRoots: .file(self.ca), certificateChainFile: self.client?.certificate, privateKeyFile: self.client?.key)
        }

        /// The services' settings for it: `REDIS_TLS_CA_FILE`, and the client certificate's files.
        public var environment: [String: String] {
            var environment = ["REDIS_TLS_CA_FILE": self.ca]
            if let client = self.client {
                environment["REDIS_TLS_CERT_FILE"] = client.certificate
                environment["REDIS_TLS_KEY_FILE"] = client.key
            }
            return environment
        }

        /// redis-server's TLS options (TLS replication included; the port is the caller's).
        var serverArguments: [String] {
            [
                "--tls-cert-file", self.server.certificate, "--tls-key-file", self.server.key, "--tls-ca-cert-file", self.ca,
                "--tls-auth-clients", self.client == nil ? "no" : "yes", "--tls-replication", "yes",
            ]
        }

        /// redis-cli's options to reach a server with it.
        public var cliArguments: [String] {
            ["--tls", "--cacert", self.ca] + (self.client.map { ["--cert", $0.certificate, "--key", $0.key] } ?? [])
        }

        /// A CA made in `folder` and the certificates it signs: the server's, for `host`, `localhost`
        /// and 127.0.0.1, and the client certificate the server then demands.
        public static func made(in folder: URL, host: String = "127.0.0.1") throws -> TLS {
            let authority = try TestCertificates.authority(in: folder)
            // An address (digits and dots, or IPv6's colons) goes in as IP, anything else as a DNS name.
            let isAddress = { (text: String) in text.contains(":") || text.allSatisfy { $0.isNumber || $0 == "." } }
            let addresses = Array(Set(["127.0.0.1", host].filter(isAddress))).sorted()
            let names = Array(Set(["localhost", host].filter { !isAddress($0) })).sorted()
            return TLS(
                server: try authority.issue("server", names: names, addresses: addresses), ca: authority.ca,
                client: try authority.issue("client"))
        }
    }

    /// The port the server listens on.
    public let port: Int
    /// The one address it listens on (127.0.0.1 unless asked otherwise), and where its clients go.
    public let host: String
    /// The server's working directory (AOF files, log).
    public let directory: URL
    /// The user and password the test's own connections authenticate with, if any.
    public let username: String?
    public let password: String?
    /// TLS only (`--port 0 --tls-port`), when started with it.
    public let tls: TLS?
    private let command: [String]
    private let removesDirectory: Bool
    private let process: Mutex<Process?>

    private init(
        port: Int, host: String, directory: URL, removesDirectory: Bool, username: String?, password: String?,
        tls: TLS?, command: [String]
    ) {
        self.tls = tls
        self.port = port
        self.host = host
        self.directory = directory
        self.removesDirectory = removesDirectory
        self.username = username
        self.password = password
        self.command = command
        self.process = Mutex(nil)
    }

    deinit {
        self.stop()
    }

    /// Where to connect.
    public var configuration: RedisConfiguration {
        var configuration = RedisConfiguration(host: self.host, port: self.port, database: 0)
        configuration.username = username
        configuration.password = password
        configuration.tls = self.tls?.clientConfiguration
        return configuration
    }

    /// What a service started against this server sets: `REDIS_URL`, and with TLS `REDIS_TLS_*`.
    public var environment: [String: String] {
        ["REDIS_URL": self.url].merging(self.tls?.environment ?? [:]) { $1 }
    }

    /// `redis://<host>:<port>/0` (`rediss://` with TLS).
    public var url: String { self.configuration.url }

    /// A new connection to this server (the caller closes it, or lets it go).
    public func connect(label: String = "test.redis") -> RedisConnection {
        RedisConnection(configuration: self.configuration, logger: .launch(label))
    }

    /// Starts a server and waits until it answers PING; retries on a port taken in the meantime.
    /// `arguments` are passed on (`["--replicaof", "127.0.0.1", "6379"]` makes a replica). `configuration`
    /// authenticates as `username` with `password` (users from an `--aclfile` in `arguments`), or, with a
    /// password alone, as the `default` user, whose password it then is (`requirepass`). With
    /// `appendOnly`, an append-only file synced every second (what compose runs). `host`: the one
    /// address it binds; `port`: a fixed port instead of a free one; `directory`: its files there, kept;
    /// `prefix`: what runs it (a test host's `ip netns exec NAME`); `tls`: TLS only, on that port.
    public static func start(
        appendOnly: Bool = false, arguments: [String] = [], username: String? = nil, password: String? = nil,
        host: String = "127.0.0.1", port: Int? = nil, directory: URL? = nil, prefix: [String] = [], tls: TLS? = nil
    ) async throws -> RedisServer {
        guard findExecutable("redis-server") != nil else {
            throw LaunchError(
                "redis-server is not on PATH; install it (Debian: apt-get install redis-server) to run these tests"
            )
        }
        var lastError: any Error = LaunchError("redis-server did not start")
        for _ in 0..<(port == nil ? 3 : 1) {
            do {
                let port = try port ?? freeLoopbackPort()
                let own =
                    directory
                    ?? FileManager.default.temporaryDirectory
                    .appendingPathComponent("redis-test-\(port)-\(UUID().uuidString)", isDirectory: true)
                try FileManager.default.createDirectory(at: own, withIntermediateDirectories: true)
                let persistence = appendOnly ? ["--appendonly", "yes", "--appendfsync", "everysec"] : ["--appendonly", "no"]
                let listen =
                    tls.map { ["--port", "0", "--tls-port", String(port)] + $0.serverArguments } ?? ["--port", String(port)]
                let command =
                    prefix + ["redis-server"] + listen + ["--bind", host, "--save", ""] + persistence
                    + ["--dir", own.path, "--daemonize", "no", "--logfile", own.appendingPathComponent("redis.log").path]
                    + arguments + (username == nil ? password.map { ["--requirepass", $0] } ?? [] : [])
                let server = RedisServer(
                    port: port, host: host, directory: own, removesDirectory: directory == nil, username: username,
                    password: password, tls: tls, command: command)
                try await server.run()
                return server
            } catch {
                lastError = error
            }
        }
        throw lastError
    }

    /// SIGTERM (a clean shutdown), wait for exit, remove the directory if it is the launcher's; safe to
    /// call more than once.
    public func stop() {
        self.end(signal: SIGTERM)
        if self.removesDirectory {
            try? FileManager.default.removeItem(at: self.directory)
        }
    }

    /// SIGKILL, like a crash or an OOM kill: for tests of how clients cope with a server that vanishes.
    /// The directory stays, for `restart()`.
    public func kill() {
        self.end(signal: SIGKILL)
    }

    /// The same server again after `kill()`, on the same port and files (its append-only file, if on).
    public func restart() async throws {
        self.end(signal: SIGKILL)
        try await self.run()
    }

    /// The server's process id while it runs.
    public var processIdentifier: Int32? {
        self.process.withLock { $0?.isRunning == true ? $0?.processIdentifier : nil }
    }

    private func run() async throws {
        guard let executable = findExecutable(self.command[0]) else {
            throw LaunchError("\(self.command[0]) is not on PATH")
        }
        let process = Process()
        process.executableURL = executable
        process.arguments = Array(self.command.dropFirst())
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.runWithDefaultSignalMask()
        self.process.withLock { $0 = process }
        if try await self.answersPing(within: .seconds(10)) { return }
        let log = (try? String(contentsOf: directory.appendingPathComponent("redis.log"), encoding: .utf8)) ?? ""
        self.stop()
        throw LaunchError("redis-server on port \(port) did not answer PING; its log:\n\(log.suffix(2_000))")
    }

    private func end(signal: Int32) {
        guard let process = self.process.withLock({ $0.take() }) else { return }
        if process.isRunning {
            _ = Foundation.kill(process.processIdentifier, signal)
            // Poll rather than waitUntilExit(): this may run on a cooperative thread (deinit), and
            // waitUntilExit spins a run loop; a shutdown takes one server tick (~100 ms) at most.
            let deadline = ContinuousClock.now + .seconds(5)
            while process.isRunning, ContinuousClock.now < deadline {
                usleep(5_000)
            }
            if process.isRunning {
                _ = Foundation.kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
    }

    /// Polls PING until it answers, the process exits, or time runs out.
    private func answersPing(within timeout: Duration) async throws -> Bool {
        let connection = RedisConnection(configuration: self.configuration, logger: .launch("launch.redis-server"))
        let deadline = ContinuousClock.now + timeout
        var answered = false
        while ContinuousClock.now < deadline, self.isRunning {
            do {
                if try await connection.send(RedisCommand("PING")) == .status("PONG") {
                    answered = true
                    break
                }
            } catch let error as RedisError where error.code == .tlsFailed {
                // Up, and refusing the launcher as it would any client (a test's expired certificate).
                answered = true
                break
            } catch {}
            try await Task.sleep(for: .milliseconds(20))
        }
        await connection.close()
        return answered
    }

    private var isRunning: Bool {
        self.process.withLock { $0?.isRunning ?? false }
    }
}
