import Foundation
import Logging
import RedisStreams
import Synchronization

/// A real redis-server child process on a free loopback port, with its own temporary directory.
///
/// Stopped by `stop()` or when the last reference goes away, so a test suite instance owning one
/// gets a fresh, isolated server per test.
public final class RedisServer: Sendable {
    /// The port the server listens on (127.0.0.1 only).
    public let port: Int
    /// The server's working directory (AOF files, log); removed on stop.
    public let directory: URL
    /// The user and password the test's own connections authenticate with, if any.
    public let username: String?
    public let password: String?
    private let process: Mutex<Process?>

    private init(port: Int, directory: URL, username: String?, password: String?, process: consuming sending Process) {
        self.port = port
        self.directory = directory
        self.username = username
        self.password = password
        self.process = Mutex(process)
    }

    deinit {
        self.stop()
    }

    /// Where to connect.
    public var configuration: RedisConfiguration {
        var configuration = RedisConfiguration(host: "127.0.0.1", port: self.port, database: 0)
        configuration.username = username
        configuration.password = password
        return configuration
    }

    /// `redis://127.0.0.1:<port>/0`.
    public var url: String { self.configuration.url }

    /// A new connection to this server (the caller closes it, or lets it go).
    public func connect(label: String = "test.redis") -> RedisConnection {
        RedisConnection(configuration: self.configuration, logger: .test(label))
    }

    /// Starts a server and waits until it answers PING; retries on a port taken in the meantime.
    /// `arguments` are passed on (`["--replicaof", "127.0.0.1", "6379"]` makes a replica). `configuration`
    /// authenticates as `username` with `password` (users from an `--aclfile` in `arguments`), or, with a
    /// password alone, as the `default` user, whose password it then is (`requirepass`).
    public static func start(
        appendOnly: Bool = false, arguments: [String] = [], username: String? = nil, password: String? = nil
    ) async throws -> RedisServer {
        guard let executable = findExecutable("redis-server") else {
            throw TestSupportError(
                "redis-server is not on PATH; install it (Debian: apt-get install redis-server) to run these tests"
            )
        }
        var lastError: any Error = TestSupportError("redis-server did not start")
        for _ in 0..<3 {
            do {
                return try await Self.launch(
                    executable: executable, appendOnly: appendOnly,
                    arguments: arguments + (username == nil ? password.map { ["--requirepass", $0] } ?? [] : []),
                    username: username, password: password)
            } catch {
                lastError = error
            }
        }
        throw lastError
    }

    /// SIGTERM (a clean shutdown), wait for exit, remove the directory; safe to call more than once.
    public func stop() {
        self.end(signal: SIGTERM)
    }

    /// SIGKILL, like a crash or an OOM kill: for tests of how clients cope with a server that vanishes.
    public func kill() {
        self.end(signal: SIGKILL)
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
        try? FileManager.default.removeItem(at: self.directory)
    }

    private static func launch(
        executable: URL, appendOnly: Bool, arguments: [String], username: String?, password: String?
    ) async throws -> RedisServer {
        let port = try freeLoopbackPort()
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("redis-test-\(port)-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let logFile = directory.appendingPathComponent("redis.log")

        let process = Process()
        process.executableURL = executable
        process.arguments =
            [
                "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", appendOnly ? "yes" : "no",
                "--dir", directory.path, "--daemonize", "no", "--logfile", logFile.path,
            ] + arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.runWithDefaultSignalMask()
        let server = RedisServer(
            port: port, directory: directory, username: username, password: password, process: process)

        if try await server.answersPing(within: .seconds(10)) {
            return server
        }
        let log = (try? String(contentsOf: logFile, encoding: .utf8)) ?? ""
        server.stop()
        throw TestSupportError("redis-server on port \(port) did not answer PING; its log:\n\(log.suffix(2_000))")
    }

    /// Polls PING until it answers, the process exits, or time runs out.
    private func answersPing(within timeout: Duration) async throws -> Bool {
        let connection = RedisConnection(configuration: self.configuration, logger: .test("test.redis-server"))
        let deadline = ContinuousClock.now + timeout
        var answered = false
        while ContinuousClock.now < deadline, self.isRunning {
            if case .status("PONG")? = try? await connection.send(RedisCommand("PING")) {
                answered = true
                break
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        await connection.close()
        return answered
    }

    private var isRunning: Bool {
        self.process.withLock { $0?.isRunning ?? false }
    }

}
