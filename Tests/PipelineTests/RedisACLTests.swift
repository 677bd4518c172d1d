import Foundation
import RedisStreams
import ServiceRuntime
import TestSupport
import Testing

/// The ACL file `attribution redis-acl` writes, loaded by a real redis-server as compose loads it: no
/// anonymous access, each service's user refused outside its rights and served within them. (Every
/// other single-node pipeline test runs the services as these users too: `PipelineProcesses`.)
@Suite("Redis ACLs") struct RedisACLTests {
    struct Operation: Sendable, CustomTestStringConvertible {
        let user: String
        let command: [String]
        let allowed: Bool
        var testDescription: String { "\(user): \(command.joined(separator: " ")) \(allowed ? "allowed" : "refused")" }
    }

    static let operations: [Operation] = [
        // Within their rights.
        .init(user: "verifier", command: ["XADD", "verified:{p00}", "*", "e", "x"], allowed: true),
        .init(user: "verifier", command: ["HGET", "registry:{registry}:ad-networks", "n"], allowed: true),
        .init(user: "attribution-winner", command: ["SET", "winner:device:{p00}:1:d", "x"], allowed: true),
        .init(user: "attribution-winner", command: ["LPUSH", "verifier:rejections:app:1", "x"], allowed: true),
        .init(user: "scheduler", command: ["XLEN", "events:{p00}"], allowed: true),
        .init(user: "dispatcher", command: ["HSET", "registry:{registry}:jwks", "kid", "x"], allowed: true),
        .init(user: "admin", command: ["HSET", "registry:{registry}:app-keys", "h", "1"], allowed: true),
        .init(user: "admin", command: ["DEL", "winner:device:{p00}:1:d"], allowed: true),
        .init(user: "ingest", command: ["XADD", "events:{p00}", "*", "e", "x"], allowed: true),
        .init(user: "ingest", command: ["SET", "ingest:idempotency:{p00}:d:r:c:k", "x"], allowed: true),
        .init(user: "ingest", command: ["HGET", "registry:{registry}:app-keys", "h"], allowed: true),
        .init(user: "ingest", command: ["LRANGE", "verifier:rejections:network:n", "0", "-1"], allowed: true),
        // The internet-facing service writes no registration, key, device state or other stage's stream.
        .init(user: "ingest", command: ["HSET", "registry:{registry}:ad-networks", "n", "x"], allowed: false),
        .init(user: "ingest", command: ["HSET", "registry:{registry}:app-keys", "h", "1"], allowed: false),
        .init(user: "ingest", command: ["XADD", "postbacks:{p00}", "*", "e", "x"], allowed: false),
        .init(user: "ingest", command: ["GET", "winner:device:{p00}:1:d"], allowed: false),
        // Outside them: another stage's keys, the registry's writes, device state, administration.
        .init(user: "verifier", command: ["HSET", "registry:{registry}:ad-networks", "n", "x"], allowed: false),
        .init(user: "verifier", command: ["GET", "winner:device:{p00}:1:d"], allowed: false),
        .init(user: "scheduler", command: ["XADD", "events:{p00}", "*", "e", "x"], allowed: false),
        .init(user: "scheduler", command: ["HSET", "registry:{registry}:app-keys", "h", "1"], allowed: false),
        .init(user: "dispatcher", command: ["HSET", "registry:{registry}:ad-networks", "n", "x"], allowed: false),
        .init(user: "dispatcher", command: ["GET", "scheduler:plan:{p00}:c"], allowed: false),
        .init(user: "attribution-winner", command: ["SET", "scheduler:plan:{p00}:c", "x"], allowed: false),
        .init(user: "attribution-winner", command: ["HSET", "registry:{registry}:jwks", "kid", "x"], allowed: false),
        .init(user: "ingest", command: ["FLUSHALL"], allowed: false),
        .init(user: "ingest", command: ["CONFIG", "SET", "appendonly", "no"], allowed: false),
        .init(user: "verifier", command: ["KEYS", "*"], allowed: false),
        .init(user: "dispatcher", command: ["ACL", "LIST"], allowed: false),
    ]

    /// The file written by the real tool, and a server started with it (the test connects as `operator`).
    static func server() async throws -> (RedisServer, URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("acl-\(UUID().uuidString)")
        let written = try ChildProcess.run(
            PipelineProcesses.binaryDirectory().appendingPathComponent("attribution"),
            arguments: ["redis-acl", "--out", directory.path])
        try #require(written.status == 0, "\(String(decoding: written.stderr, as: UTF8.self))")
        let server = try await RedisServer.start(
            arguments: ["--aclfile", directory.appendingPathComponent("users.acl").path], username: "operator",
            password: try password(of: "operator", in: directory))
        return (server, directory)
    }

    static func password(of user: String, in directory: URL) throws -> String {
        try String(contentsOf: directory.appendingPathComponent("\(user).password"), encoding: .utf8)
            .trimmingCharacters(in: .newlines)
    }

    @Test(arguments: operations) func eachServiceHasOnlyItsRights(operation: Operation) async throws {
        let (server, directory) = try await Self.server()
        defer { server.stop() }
        var configuration = server.configuration
        configuration.username = operation.user
        configuration.password = try Self.password(of: operation.user, in: directory)
        let connection = RedisConnection(configuration: configuration, logger: .test("test.acl"))
        defer { Task { await connection.close() } }
        do {
            _ = try await connection.send(RedisCommand(operation.command))
            #expect(operation.allowed, "\(operation.testDescription): it was served")
        } catch {
            #expect(!operation.allowed, "\(operation.testDescription): \(error)")
            #expect("\(error)".contains("NOPERM"), "refused for its rights, not another reason: \(error)")
        }
    }

    @Test func noAnonymousAccessAndAHealthcheckThatCanOnlyPing() async throws {
        let (server, directory) = try await Self.server()
        defer { server.stop() }
        var anonymous = server.configuration
        anonymous.username = nil
        anonymous.password = nil
        let stranger = RedisConnection(configuration: anonymous, logger: .test("test.acl"))
        await #expect {
            try await stranger.send(RedisCommand("GET", "registry:{registry}:ad-networks"))
        } throws: { "\($0)".contains("NOAUTH") }
        await stranger.close()

        var health = server.configuration
        health.username = "healthcheck"
        health.password = "anything"
        let healthcheck = RedisConnection(configuration: health, logger: .test("test.acl"))
        #expect(try await healthcheck.send(RedisCommand("PING")).string == "PONG")
        await #expect { try await healthcheck.send(RedisCommand("XLEN", "events:{p00}")) } throws: { "\($0)".contains("NOPERM") }
        await healthcheck.close()

        // A wrong password for a service's user is refused.
        var wrong = server.configuration
        wrong.username = "verifier"
        wrong.password = try Self.password(of: "dispatcher", in: directory)
        let impostor = RedisConnection(configuration: wrong, logger: .test("test.acl"))
        await #expect { try await impostor.send(RedisCommand("PING")) } throws: { "\($0)".contains("WRONGPASS") }
        await impostor.close()
    }

    /// A transaction a service's user committed survives a SIGKILL of Redis and its restart from the AOF.
    /// Redis before 7.2 replays an AOF's MULTI/EXEC as the `default` user: with no rights there, the
    /// restarted server refused each one (NOPERM) and lost every transaction it had acknowledged.
    @Test func transactionsSurviveARestartFromTheAOF() async throws {
        let acl = FileManager.default.temporaryDirectory.appendingPathComponent("acl-\(UUID().uuidString)")
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("aof-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        defer {
            try? FileManager.default.removeItem(at: acl)
            try? FileManager.default.removeItem(at: data)
        }
        let written = try ChildProcess.run(
            PipelineProcesses.binaryDirectory().appendingPathComponent("attribution"),
            arguments: ["redis-acl", "--out", acl.path])
        try #require(written.status == 0, "\(String(decoding: written.stderr, as: UTF8.self))")
        // Later arguments win: this test's own data directory, kept across the two servers.
        let arguments = ["--aclfile", acl.appendingPathComponent("users.acl").path, "--appendonly", "yes", "--dir", data.path]
        func start() async throws -> RedisServer {
            try await RedisServer.start(
                arguments: arguments, username: "verifier", password: try Self.password(of: "verifier", in: acl))
        }
        let first = try await start()
        let connection = first.connect()
        let replies = try await connection.pipeline([
            RedisCommand("MULTI"), RedisCommand("XADD", "verified:{p00}", "*", "e", "1"),
            RedisCommand("XADD", "verified:{p00}", "*", "e", "2"), RedisCommand("EXEC"),
        ])
        guard case .array(let results) = replies.last, results.count == 2 else {
            Issue.record("the transaction did not commit: \(replies)")
            return
        }
        await connection.close()
        first.kill()
        let second = try await start()
        defer { second.stop() }
        let reader = second.connect()
        #expect(try await reader.send(RedisCommand("XLEN", "verified:{p00}")).int == 2, "both entries reloaded from the AOF")
        await reader.close()
    }

    /// The operator's tools read the password from its file, as the services do: never on the command line.
    @Test func operatorToolsReadThePasswordFile() async throws {
        let (server, directory) = try await Self.server()
        defer { server.stop() }
        let tool = PipelineProcesses.binaryDirectory().appendingPathComponent("attribution")
        let url = "redis://operator@127.0.0.1:\(server.port)/0"
        let file = directory.appendingPathComponent("operator.password").path
        let withOption = try ChildProcess.run(tool, arguments: ["status", "--redis-url", url, "--redis-password-file", file])
        #expect(withOption.status == 0, "\(String(decoding: withOption.stderr, as: UTF8.self))")
        let fromEnvironment = try ChildProcess.run(
            URL(fileURLWithPath: "/usr/bin/env"),
            arguments: ["REDIS_PASSWORD_FILE=\(file)", tool.path, "status", "--redis-url", url])
        #expect(fromEnvironment.status == 0, "\(String(decoding: fromEnvironment.stderr, as: UTF8.self))")
        let without = try ChildProcess.run(tool, arguments: ["status", "--redis-url", url])
        #expect(without.status != 0, "no password, no answer")
    }
}
