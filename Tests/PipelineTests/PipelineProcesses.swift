import AttributionCrypto
import AttributionModel
import Foundation
import PipelineCatalog
import ServiceRuntime
import Synchronization
import TestSupport
import Testing

/// The six services and the reference receiver as real child processes on free loopback ports,
/// each logging to its own file (printed when a test fails to find what it waited for). With
/// `inProcess`, the services are built in this process instead (`InProcessService`: same settings,
/// same listeners on the same ports), for tests where the process boundary is not the point; the
/// receiver stays a child process.
final class PipelineProcesses: Sendable {
    let directory: URL
    let ingestURL: String
    /// The admin service: the admin API, its /metrics and detailed /ready.
    let adminURL: String
    /// ingest's operations listener: its /metrics and detailed /ready.
    let operationsURL: String
    let receiverURL: String
    let adminToken = "test-admin-token-of-at-least-32-characters"
    let postbackFile: URL
    let signingKeyID = "test-pipeline/0"
    private let children: Mutex<[String: Process]> = Mutex([:])
    private let inProcess: Bool
    private let builtHere: Mutex<[String: InProcessService]> = Mutex([:])
    private let httpPorts: Mutex<[String: Int]> = Mutex([:])

    /// The /health and /metrics address of a running service.
    func url(of service: String) -> String? {
        httpPorts.withLock { $0[service] }.map { "http://127.0.0.1:\($0)" }
    }
    private let binaries: URL
    private let environment: [String: String]
    /// Each service's own Redis user (`REDIS_URL`, `REDIS_PASSWORD_FILE`), on a single Redis.
    private let credentials: [String: [String: String]]

    /// Where `swift build` put the executables (TestSupport's `builtExecutables`).
    static func binaryDirectory() -> URL { builtExecutables() }

    /// Every service and the receiver, or only the services named in `only` (a stage tested alone on
    /// entries a test writes itself, or ingest alone).
    init(
        redis: any TestRedis, timeScale: Double, extraEnvironment: [String: String] = [:], only: Set<String>? = nil,
        inProcess: Bool = false
    ) throws {
        // PIPELINE_TESTS_IN_PROCESS=false runs every service as a process (to compare, or to debug).
        self.inProcess = inProcess && ProcessInfo.processInfo.environment["PIPELINE_TESTS_IN_PROCESS"] != "false"
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("pipeline-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        binaries = Self.binaryDirectory()
        for name in Self.services + ["attribution"] {
            guard FileManager.default.isExecutableFile(atPath: binaries.appendingPathComponent(name).path) else {
                throw TestSupportError("\(name) is not built in \(binaries.path): run `swift build` first (scripts/test.sh does)")
            }
        }
        let ingestPort = try freeLoopbackPort()
        let receiverPort = try freeLoopbackPort()
        let adminPort = try freeLoopbackPort()
        let operationsPort = try freeLoopbackPort()
        ingestURL = "http://127.0.0.1:\(ingestPort)"
        adminURL = "http://127.0.0.1:\(adminPort)"
        operationsURL = "http://127.0.0.1:\(operationsPort)"
        receiverURL = "http://127.0.0.1:\(receiverPort)"
        postbackFile = directory.appendingPathComponent("postbacks.jsonl")
        var environment = [
            "REDIS_CLUSTER": redis.cluster ? "true" : "false", "TIME_SCALE": String(timeScale),
            "LOG_LEVEL": "debug", "CLAIM_IDLE_MS": "1000",
            // Conversions settle 250 ms (wall clock) so that a scenario's impressions posted just after one count.
            "CONVERSION_SETTLE_MS": "250", "WINDOW_CLOSE_GRACE_MS": "400",
            // The receiver listens on http://127.0.0.1: exempt from the https and public-address rules.
            "POSTBACK_URL_ALLOWLIST": "127.0.0.1", "HTTP_HOST": "127.0.0.1",
            // Tests send few requests and never retry a 503: on a busy CI machine a 20 ms queueing
            // target could shed one. The overload tests set their own.
            "INGEST_QUEUE_TARGET_MS": "500",
            "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
        ]
        environment.merge(redis.environment) { $1 }
        environment.merge(extraEnvironment) { $1 }
        self.environment = environment
        // On one Redis, each service connects as its own ACL user with only its rights (`RedisRights`),
        // so every pipeline test also checks that no service needs a right it was not given.
        if let server = redis as? RedisServer, extraEnvironment["REDIS_URL"] == nil {
            credentials = try Self.createUsers(on: server, in: directory)
        } else {
            credentials = [:]
        }
        // The HTTP API: ingest and the admin service, always together; admin listening before this
        // returns, so that a test that saw ingest up can register at once.
        func startHTTPAPI() throws {
            try start("admin", port: adminPort, ["ADMIN_TOKEN": adminToken])
            try start("ingest", port: ingestPort, ["OPERATIONS_HTTP_PORT": String(operationsPort)])
            let deadline = ContinuousClock.now + .seconds(30)
            while !loopbackPortAccepts(adminPort), ContinuousClock.now < deadline { usleep(20_000) }
        }
        if let only {
            for name in only.sorted() {
                if name == "ingest" {
                    try startHTTPAPI()
                } else {
                    try start(name, port: try freeLoopbackPort())
                }
            }
            return
        }
        try startHTTPAPI()
        for worker in ["verifier", "attribution-winner", "scheduler"] { try start(worker, port: try freeLoopbackPort()) }
        try startDispatcher()
        try start(
            "receiver", executable: "attribution",
            arguments: [
                "receiver", "--port", String(receiverPort), "--jwks-url", "\(ingestURL)/.well-known/jwks.json", "--output",
                postbackFile.path,
            ],
            port: nil)
    }

    func startDispatcher() throws {
        let key = directory.appendingPathComponent("signing.pem")
        if !FileManager.default.fileExists(atPath: key.path) {
            try SigningKey.generate().pemRepresentation.write(to: key, atomically: true, encoding: .utf8)
        }
        try start("dispatcher", port: try freeLoopbackPort(), ["SIGNING_KEY_FILE": key.path, "SIGNING_KEY_ID": signingKeyID])
    }

    func start(_ name: String, executable: String? = nil, arguments: [String] = [], port: Int?, _ extra: [String: String] = [:])
        throws
    {
        var environment = self.environment.merging(credentials[name] ?? [:]) { $1 }.merging(extra) { $1 }
        if let port {
            environment["HTTP_PORT"] = String(port)
            httpPorts.withLock { $0[name] = port }
        }
        let log = directory.appendingPathComponent("\(name).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        if inProcess, executable == nil, Self.services.contains(name) {
            let service = InProcessService(name, environment: environment, log: log)
            builtHere.withLock { $0[name] = service }
            return
        }
        if Self.services.contains(name) { SpawnLog.record(name) }
        let process = Process()
        // An absolute path runs a tool of the system (python3 through /usr/bin/env); others are ours.
        process.executableURL =
            executable.map { $0.hasPrefix("/") ? URL(fileURLWithPath: $0) : binaries.appendingPathComponent($0) }
            ?? binaries.appendingPathComponent(name)
        process.arguments = arguments
        process.environment = environment
        let handle = try FileHandle(forWritingTo: log)
        handle.seekToEndOfFile()
        process.standardOutput = handle
        process.standardError = handle
        try process.runWithDefaultSignalMask()
        children.withLock { $0[name] = process }
    }

    /// Creates one ACL user per service with a random password (written to a file in `directory`), and
    /// returns each service's `REDIS_URL` and `REDIS_PASSWORD_FILE`.
    static func createUsers(on server: RedisServer, in directory: URL) throws -> [String: [String: String]] {
        var credentials: [String: [String: String]] = [:]
        for service in RedisRights.services {
            let password = UUID().uuidString
            let file = directory.appendingPathComponent("\(service).redis-password")
            try (password + "\n").write(to: file, atomically: true, encoding: .utf8)
            let result = try ChildProcess.run(
                URL(fileURLWithPath: "/usr/bin/env"),
                arguments: ["redis-cli"] + server.cliArguments + RedisRights.setUser(service, password: password))
            guard result.status == 0, String(decoding: result.stdout, as: UTF8.self).hasPrefix("OK") else {
                throw TestSupportError(
                    "ACL SETUSER \(service) failed: \(String(decoding: result.stdout + result.stderr, as: UTF8.self))")
            }
            credentials[service] = [
                "REDIS_URL": "\(server.tls == nil ? "redis" : "rediss")://\(service)@127.0.0.1:\(server.port)/0",
                "REDIS_PASSWORD_FILE": file.path,
            ]
        }
        return credentials
    }

    func signal(_ name: String, _ signal: Int32) {
        guard let process = children.withLock({ $0[name] }) else { return }
        Foundation.kill(process.processIdentifier, signal)
    }

    /// SIGTERM, then waits for the exit: how long it took and the exit status.
    func stopGracefully(_ name: String) -> (elapsed: Duration, status: Int32)? {
        guard let process = children.withLock({ $0.removeValue(forKey: name) }) else { return nil }
        let started = ContinuousClock.now
        process.terminate()
        process.waitUntilExit()
        return (ContinuousClock.now - started, process.terminationStatus)
    }

    /// SIGKILL: the process gets no chance to finish or acknowledge anything.
    func kill(_ name: String) {
        guard let process = children.withLock({ $0.removeValue(forKey: name) }) else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    func logs() -> String {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasSuffix(".log") }.sorted().map { name in
            let text = (try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)) ?? ""
            return "=== \(name)\n" + text.split(separator: "\n").suffix(30).joined(separator: "\n")
        }.joined(separator: "\n")
    }

    /// Received postbacks as the receiver wrote them (one JSON object a line).
    func receivedPostbacks() -> [[String: Any]] {
        guard let text = try? String(contentsOf: postbackFile, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    static let services = ["ingest", "admin", "verifier", "attribution-winner", "scheduler", "dispatcher"]

    /// Stops the services built in this process and waits until they have (a test that checks what
    /// was written once they stopped).
    func stopInProcess() async {
        for service in takeBuiltHere() { await service.stopAndWait() }
    }

    private func takeBuiltHere() -> [InProcessService] {
        builtHere.withLock { built in
            defer { built.removeAll() }
            return Array(built.values)
        }
    }

    func stop() {
        for service in takeBuiltHere() { service.stop() }
        let all = children.withLock { children -> [Process] in
            defer { children.removeAll() }
            return Array(children.values)
        }
        for process in all where process.isRunning { process.terminate() }
        for process in all { process.waitUntilExit() }
    }

    deinit { stop() }
}

extension PipelineProcesses {
    /// The usual campaign set-up through the admin API: one ad network (its ES256 public key, postbacks to
    /// the receiver), a publisher app listing it, an advertised app with default rules. Returns the
    /// advertised app's key for conversions and updates. Any non-2xx answer fails the test.
    @discardableResult
    func registerCampaign(
        network: String, publicKeyPEM: String, publisher: ItemIdentifier, app: ItemIdentifier, http: HTTPTestClient
    ) async throws -> String {
        for (method, path, json) in [
            (
                "PUT", "/v1/admin/ad-networks/\(network)",
                ["public-key": publicKeyPEM, "postback-url": "\(receiverURL)/postbacks"] as [String: Any]
            ),
            ("PUT", "/v1/admin/publisher-apps/\(publisher)", ["AdNetworkIdentifiers": [network]]),
            ("PUT", "/v1/admin/advertised-apps/\(app)", [:]),
        ] {
            let reply = try await http.send(method, adminURL + path, json: json, token: adminToken)
            guard reply.status == 200 else {
                throw TestSupportError("\(path) answered \(reply.status): \(String(decoding: reply.body, as: UTF8.self))")
            }
        }
        let issued = try await http.send("POST", "\(adminURL)/v1/admin/advertised-apps/\(app)/keys", token: adminToken)
        guard let key = issued.json["app-key"] as? String else { throw TestSupportError("no app key issued") }
        return key
    }
}

/// With PIPELINE_TESTS_SPAWN_LOG=<file>, each service process a test starts appends "<test id>\t<service>"
/// to that file: how many tests spawn service processes (`sort -u -k1,1 file | wc -l`).
enum SpawnLog {
    static func record(_ service: String) {
        guard let path = ProcessInfo.processInfo.environment["PIPELINE_TESTS_SPAWN_LOG"] else { return }
        let test = Test.current.map { "\($0.id)" } ?? "?"
        FileLogHandler.append("\(test)\t\(service)", to: URL(fileURLWithPath: path))
    }
}
