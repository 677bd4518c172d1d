import AttributionModel
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceRuntime
import TestSupport
import Testing

/// What an operator sees before anything runs: every service answers `--help` with its configuration
/// keys, and bad configuration prints one clear line and exits 2, never a crash backtrace.
@Suite("Service command lines")
struct CommandLineTests {
    static let services = ["ingest", "admin", "verifier", "attribution-winner", "scheduler", "dispatcher"]

    static func run(_ service: String, _ arguments: [String] = [], environment: [String] = []) throws -> ChildProcess.Result {
        let binary = PipelineProcesses.binaryDirectory().appendingPathComponent(service).path
        if PipelineProcesses.services.contains(service) { SpawnLog.record(service) }
        // Nothing may reach a Redis: the port is one nobody listens on. A case that starts the service
        // instead of stopping it ends after 60 s (status 124), not never.
        return try ChildProcess.run(
            URL(fileURLWithPath: "/usr/bin/timeout"),
            arguments: ["60", "/usr/bin/env", "REDIS_URL=redis://127.0.0.1:1/0", "HTTP_PORT=0"] + environment + [binary]
                + arguments)
    }

    @Test(arguments: services)
    func helpListsWhatTheServiceReads(service: String) throws {
        for flag in ["--help", "-h"] {
            let result = try Self.run(service, [flag])
            let text = String(decoding: result.stdout, as: UTF8.self)
            #expect(result.status == 0, "\(service) \(flag): \(String(decoding: result.stderr, as: UTF8.self))")
            #expect(text.hasPrefix("\(service): ") && text.contains("Usage: \(service) [--help]"))
            #expect(text.contains("REDIS_URL (URL; default redis://127.0.0.1:6379/0"))
        }
    }

    /// `--version` prints the version; an argument the service does not know (a mistyped flag) is
    /// refused with the usage and exit status 2 before anything starts, never ignored.
    @Test(arguments: services)
    func versionAndUnknownArguments(service: String) throws {
        let version = try Self.run(service, ["--version"])
        #expect(
            version.status == 0 && String(decoding: version.stdout, as: UTF8.self) == "\(service) \(PipelineVersion.current)\n")
        for arguments in [["--verison"], ["start"], ["--version", "-x"]] {
            let refused = try Self.run(service, arguments)
            let text = String(decoding: refused.stderr, as: UTF8.self)
            #expect(refused.status == 2, "\(service) \(arguments): \(text)")
            #expect(
                text.hasPrefix("\(service): unknown argument \(arguments.last!)\nUsage: \(service) [--help] [--version]"),
                "\(text)")
            #expect(refused.stdout.isEmpty)
        }
    }

    /// The tool's help groups its commands by who uses them, and holds no benchmark command: those are
    /// `attribution-bench`'s, which lists them and answers `--version`.
    @Test func theToolsHelpIsGroupedByAudience() throws {
        let help = String(decoding: try Self.run("attribution", ["--help"]).stdout, as: UTF8.self)
        for group in ["AD NETWORK SUBCOMMANDS:", "APP BACKEND SUBCOMMANDS:", "OPERATOR SUBCOMMANDS:", "TEST RUN SUBCOMMANDS:"] {
            #expect(help.contains(group), "\(help)")
        }
        #expect(!help.contains("bench") && !help.contains("  load ") && help.contains("  status "), "\(help)")
        #expect(try Self.run("attribution", ["bench-coding"]).status != 0)
        let bench = String(decoding: try Self.run("attribution-bench", ["--help"]).stdout, as: UTF8.self)
        for command in ["load", "preload", "holding", "coding", "transport"] {
            #expect(bench.contains("  \(command) "), "\(bench)")
        }
        let version = try Self.run("attribution-bench", ["--version"])
        #expect(version.status == 0 && String(decoding: version.stdout, as: UTF8.self) == "\(PipelineVersion.current)\n")
    }

    /// `attribution-bench transport` refuses a list with one bad value, with the usage, before it starts a
    /// Redis: a value it skipped would measure something else than was asked for.
    @Test func theTransportBenchmarkRefusesBadLists() throws {
        for (arguments, reason) in [
            (["--tasks", "1,x"], "--tasks takes positive integers, comma-separated, got 1,x"),
            (["--batch", "20,0"], "--batch takes positive integers, comma-separated, got 20,0"),
            (["--batch", "1,,20"], "--batch takes positive integers, comma-separated, got 1,,20"),
            (["--transports", "hiredis,bogus"], "--transports takes hiredis, event-loop, event-loop-tls"),
        ] {
            let refused = try Self.run("attribution-bench", ["transport"] + arguments)
            let text = String(decoding: refused.stderr, as: UTF8.self)
            #expect(refused.status == 64, "\(arguments): \(text)")
            #expect(text.contains(reason) && text.contains("Usage: attribution-bench transport"), "\(text)")
        }
    }

    @Test func theToolAnswersVersion() throws {
        let result = try Self.run("attribution", ["--version"])
        #expect(result.status == 0 && String(decoding: result.stdout, as: UTF8.self) == "\(PipelineVersion.current)\n")
    }

    /// `attribution catalog --json` is what the scripts read the Redis names and the compact key table
    /// from: it must say what the services build.
    @Test func theCatalogIsWhatTheServicesBuild() throws {
        let result = try Self.run("attribution", ["catalog", "--json", "--partitions", "3"])
        #expect(result.status == 0, "\(String(decoding: result.stderr, as: UTF8.self))")
        let catalog = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout)) as? [String: Any])
        let partitions = try #require(catalog["partitions"] as? [String: Any])
        #expect(partitions["tags"] as? [String] == Partitioning(count: 3).partitions.map(\.tag))
        let streams = try #require(catalog["streams"] as? [String: String])
        #expect(streams["events"] == StreamNames.events.base && streams["postbacks"] == StreamNames.postbacks.base)
        let groups = try #require(catalog["groups"] as? [[String: Any]])
        #expect(groups.compactMap { $0["name"] as? String } == ConsumerGroups.all.map(\.name))
        let coding = try #require(catalog["compact-coding"] as? [String: Any])
        #expect(coding["keys"] as? [String] == CompactCoding.keyNames && coding["version"] as? Int == 2)
        #expect(coding["magic"] as? Int == 0xF5 && catalog["held-postback-magic"] as? Int == 0xC1)
        #expect(try Self.run("attribution", ["catalog"]).status != 0)
    }

    /// `LOG_FORMAT=json`: every line the service writes is one JSON object with the documented members
    /// (a dispatcher generating its development keys warns, then waits for the Redis nobody serves; it
    /// is stopped after 3 s).
    @Test func jsonLogLinesAreObjects() throws {
        let binary = PipelineProcesses.binaryDirectory().appendingPathComponent("dispatcher").path
        SpawnLog.record("dispatcher")
        let result = try ChildProcess.run(
            URL(fileURLWithPath: "/usr/bin/timeout"),
            arguments: [
                "3", "/usr/bin/env", "REDIS_URL=redis://127.0.0.1:1/0", "HTTP_PORT=0", "LOG_FORMAT=json",
                "DEVELOPMENT_MODE=true", "TIME_SCALE=86400", "LOG_LEVEL=debug", binary,
            ])
        let lines = String(decoding: result.stderr, as: UTF8.self).split(separator: "\n").prefix(20)
        #expect(!lines.isEmpty)
        for line in lines {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object?["label"] as? String == "dispatcher", "\(line)")
            #expect((object?["time"] as? String)?.hasSuffix("Z") == true, "UTC: \(line)")
            #expect(object?["level"] is String && object?["message"] is String && object?["source"] is String, "\(line)")
        }
    }

    @Test func eachServiceListsItsOwnKeys() throws {
        let admin = String(decoding: try Self.run("admin", ["--help"]).stdout, as: UTF8.self)
        #expect(
            admin.contains(
                "ADMIN_TOKEN (secret; default none: required unless ADMIN_TOKEN_FILE; allowed at least 32 characters)")
                && admin.contains("ADMIN_TOKEN_FILE (path;") && admin.contains("--routes"))
        let ingest = String(decoding: try Self.run("ingest", ["--help"]).stdout, as: UTF8.self)
        #expect(ingest.contains("OPERATIONS_HTTP_PORT") && ingest.contains("--openapi"))
        #expect(!ingest.contains("BATCH_SIZE") && !ingest.contains("ADMIN_TOKEN"), "ingest holds no admin token")
        let scheduler = String(decoding: try Self.run("scheduler", ["--help"]).stdout, as: UTF8.self)
        #expect(scheduler.contains("CROWD_TIER_THRESHOLDS") && scheduler.contains("BATCH_SIZE"))
        #expect(!scheduler.contains("ADMIN_TOKEN"))
    }

    /// Three rules of the list: a file that is not it.
    static let shortList = ScenarioFiles.repositoryRoot.appendingPathComponent("Tests/Fixtures/three-suffixes.dat").path

    static let badConfigurations: [(service: String, setting: String, line: String)] = [
        ("admin", "ADMIN_TOKEN=", "configuration ADMIN_TOKEN: is required (or ADMIN_TOKEN_FILE)"),
        ("admin", "ADMIN_TOKEN=guessable", "configuration ADMIN_TOKEN: must be at least 32 characters, got 9"),
        // /metrics and the detailed /ready never share the public port.
        (
            "ingest", "HTTP_PORT=8090 OPERATIONS_HTTP_PORT=8090",
            "configuration OPERATIONS_HTTP_PORT: must differ from HTTP_PORT (both 8090)"
        ),
        ("ingest", "INGEST_WAIT_TIMEOUT_MS=0", "configuration INGEST_WAIT_TIMEOUT_MS: must be an integer in 1...60000, got 0"),
        ("verifier", "REDIS_PASSWORD_FILE=/nonexistent", "configuration REDIS_PASSWORD_FILE: cannot read /nonexistent"),
        // A CA file never turns TLS on by itself, nor is it ignored.
        (
            "verifier", "REDIS_TLS_CA_FILE=/etc/hosts",
            "configuration REDIS_TLS_CA_FILE: applies to TLS only: the Redis URL must start with rediss://"
        ),
        (
            "scheduler", "REDIS_URL=rediss://127.0.0.1:1/0 REDIS_TLS_CERT_FILE=/etc/hosts",
            "configuration REDIS_TLS_CERT_FILE: a client certificate needs its key (the key file)"
        ),
        ("verifier", "BATCH_SIZE=abc", "configuration BATCH_SIZE: must be an integer in 1...10000, got abc"),
        ("scheduler", "LOG_FORMAT=xml", "configuration LOG_FORMAT: must be one of text, json, got xml"),
        (
            "attribution-winner", "CONVERSION_SETTLE_MS=-1",
            "configuration CONVERSION_SETTLE_MS: must be an integer in 0...3600000, got -1"
        ),
        (
            "scheduler", "CROWD_TIER_THRESHOLDS=1,2",
            "configuration CROWD_TIER_THRESHOLDS: must be three ascending integers, got 1,2"
        ),
        (
            "dispatcher", "DEVELOPMENT_MODE=true DELIVERY_TIMEOUT_MS=0",
            "configuration DELIVERY_TIMEOUT_MS: must be an integer in 1...300000, got 0"
        ),
        // Production signs with a key receivers can pin: no made-up key unless development mode says so.
        (
            "dispatcher", "SIGNING_KEY_ID=pinned/1",
            "configuration SIGNING_KEY_FILE: is required (or DEVELOPMENT_MODE=true to generate a key per process)"
        ),
        ("dispatcher", "SIGNING_KEY_FILE=/nonexistent.pem", "configuration SIGNING_KEY_FILE: cannot read /nonexistent.pem"),
        (
            "dispatcher", "DEVELOPMENT_MODE=maybe",
            "configuration DEVELOPMENT_MODE: must be true or false (or yes, no, 1, 0), got maybe"
        ),
        // Read before Redis is (which nobody serves here): not retried forever, no keys published first.
        (
            "dispatcher", "DEVELOPMENT_MODE=true DELIVERY_CONCURRENCY_PER_HOST=0",
            "configuration DELIVERY_CONCURRENCY_PER_HOST: must be an integer in 1...1000, got 0"
        ),
        (
            "dispatcher", "DEVELOPMENT_MODE=true REGISTRY_CACHE_MS=-1",
            "configuration REGISTRY_CACHE_MS: must be an integer in 0...3600000, got -1"
        ),
        // The production key's "generated one" warning is not said before the development key fails.
        (
            "dispatcher", "DEVELOPMENT_MODE=true DEVELOPMENT_SIGNING_KEY_FILE=/nonexistent.pem",
            "configuration DEVELOPMENT_SIGNING_KEY_FILE: cannot read /nonexistent.pem"
        ),
        (
            "dispatcher", "DEVELOPMENT_MODE=true TEST_SIGNING_KEY_FILE=/nonexistent.pem",
            "configuration TEST_SIGNING_KEY_FILE: cannot read /nonexistent.pem"
        ),
        // Receivers tell the three keys apart by kid: two roles under one kid would be one JWKS entry.
        (
            "dispatcher", "DEVELOPMENT_MODE=true TEST_SIGNING_KEY_ID=attribution-pipeline-development/0",
            "configuration TEST_SIGNING_KEY_ID: is attribution-pipeline-development/0, the kid of DEVELOPMENT_SIGNING_KEY_ID too: "
                + "each key needs its own kid"
        ),
        // Copy endpoints' registrable domains need the real Public Suffix List, never a silent fallback.
        (
            "dispatcher", "DEVELOPMENT_MODE=true PUBLIC_SUFFIX_LIST=/nonexistent.dat",
            "configuration PUBLIC_SUFFIX_LIST: cannot read /nonexistent.dat (install Debian's publicsuffix package, or download "
                + "https://publicsuffix.org/list/public_suffix_list.dat and set PUBLIC_SUFFIX_LIST to it)"
        ),
        (
            "admin", "ADMIN_TOKEN=\(String(repeating: "t", count: 32)) PUBLIC_SUFFIX_LIST=\(shortList)",
            "configuration PUBLIC_SUFFIX_LIST: \(shortList) holds 3 rules, not the Public Suffix List (about 10 000)"
        ),
    ]

    /// The partition count is fixed per deployment: recorded by the first service, checked by the rest.
    @Test func aServiceWithAnotherPartitionCountRefusesToStart() async throws {
        let redis = try await RedisServer.start()
        defer { redis.stop() }
        let connection = redis.connect()
        try await PartitionRecord.check(Partitioning(count: 8), on: connection, logger: .test("test.partitions"))
        #expect(try await connection.send(RedisCommand("GET", RegistryKeys.partitions)).string == "8", "the first records")
        try await PartitionRecord.check(Partitioning(count: 8), on: connection, logger: .test("test.partitions"))
        let other = try Self.run("scheduler", environment: ["REDIS_URL=\(redis.url)"])
        let errors = String(decoding: other.stderr, as: UTF8.self)
        #expect(other.status == 2, "\(errors)")
        #expect(
            errors.split(separator: "\n").last.map(String.init)
                == "configuration PARTITIONS: is 16, but this Redis holds a pipeline with 8 partitions; start every service with PARTITIONS=8 (the count is fixed per deployment)",
            "\(errors)")
        #expect(!errors.contains("Fatal error") && !errors.contains("Backtrac"))
    }

    /// The postback-identifier key is written once and shared: a scheduler keeps what it finds (here a
    /// key not in hex, which stops it with one line instead of signing identifiers nobody can repeat).
    @Test func aSchedulerKeepsThePostbackIdentifierKeyItFinds() async throws {
        let redis = try await RedisServer.start()
        defer { redis.stop() }
        let connection = redis.connect()
        _ = try await connection.send(RedisCommand("SET", StageKeys.postbackIdentifierKey, "not hex"))
        let result = try Self.run("scheduler", environment: ["REDIS_URL=\(redis.url)"])
        let errors = String(decoding: result.stderr, as: UTF8.self)
        #expect(result.status == 1, "\(errors)")
        let last = errors.split(separator: "\n").last.map(String.init) ?? ""
        #expect(last.hasPrefix("scheduler: stopped: ") && last.contains(StageKeys.postbackIdentifierKey), "\(errors)")
        #expect(!errors.contains("Fatal error") && !errors.contains("Backtrac"))
        #expect(try await connection.send(RedisCommand("GET", StageKeys.postbackIdentifierKey)).string == "not hex")
    }

    /// A failure at start that is not configuration (the HTTP port taken, here by Redis itself) is one
    /// line and exit 1 too, not a crash backtrace.
    @Test func aTakenPortIsOneLineAndExitOne() async throws {
        let redis = try await RedisServer.start()
        defer { redis.stop() }
        let port = try #require(redis.url.split(separator: ":").last?.split(separator: "/").first)
        let result = try Self.run("verifier", environment: ["REDIS_URL=\(redis.url)", "HTTP_PORT=\(port)"])
        let errors = String(decoding: result.stderr, as: UTF8.self)
        #expect(result.status == 1, "\(errors)")
        let last = errors.split(separator: "\n").last.map(String.init) ?? ""
        #expect(last.hasPrefix("verifier: stopped: ") && last.contains("Address already in use"), "\(errors)")
        #expect(!errors.contains("Fatal error") && !errors.contains("Backtrac"))
    }

    /// Started before its Redis (compose starts them together), the dispatcher waits for it and then
    /// serves; it used to stop at once while it published its signing keys.
    @Test func theDispatcherStartedBeforeItsRedisWaitsForIt() async throws {
        let port = try freeLoopbackPort()
        let httpPort = try freeLoopbackPort()
        let dispatcher = Process()
        dispatcher.executableURL = PipelineProcesses.binaryDirectory().appendingPathComponent("dispatcher")
        dispatcher.environment = [
            "REDIS_URL": "redis://127.0.0.1:\(port)/0", "HTTP_PORT": String(httpPort), "LOG_LEVEL": "error",
            "DEVELOPMENT_MODE": "true",
        ]
        dispatcher.standardOutput = FileHandle.nullDevice
        dispatcher.standardError = FileHandle.nullDevice
        try dispatcher.run()
        // SIGKILL: a Process started from the test runner inherits its blocked signals, SIGTERM included.
        defer { if dispatcher.isRunning { kill(dispatcher.processIdentifier, SIGKILL) } }
        try await Task.sleep(for: .seconds(1))
        #expect(dispatcher.isRunning, "still waiting for Redis, not stopped")

        let redis = Process()
        let redisServer = try #require(findExecutable("redis-server"), "redis-server on PATH")
        redis.executableURL = redisServer
        redis.arguments = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        redis.currentDirectoryURL = FileManager.default.temporaryDirectory
        redis.standardOutput = FileHandle.nullDevice
        redis.standardError = FileHandle.nullDevice
        try redis.run()
        defer { kill(redis.processIdentifier, SIGKILL) }
        #expect(try await HTTPTestClient().waitUntilUp("http://127.0.0.1:\(httpPort)/health", timeout: .seconds(20)))
    }

    /// OpenSSL's own words follow the file's name, so the line is held to its start.
    @Test("a TLS file that cannot be loaded stops a service at start, in one line naming the key and the file")
    func unreadableTLSFileIsOneLine() throws {
        for (service, key) in [("ingest", "REDIS_TLS_CA_FILE"), ("dispatcher", "REDIS_TLS_CA_FILE")] {
            let result = try Self.run(
                service, environment: ["REDIS_URL=rediss://127.0.0.1:1/0", "\(key)=/nonexistent.pem", "DEVELOPMENT_MODE=true"])
            let errors = String(decoding: result.stderr, as: UTF8.self)
            #expect(result.status == 2, "\(service): \(errors)")
            let lines = errors.split(separator: "\n")
            #expect(lines.count == 1 && lines[0].hasPrefix("configuration \(key): the CA bundle /nonexistent.pem"), "\(errors)")
        }
    }

    /// A Redis that TLS refuses is a configuration that does not match the server: it stops the service
    /// at start, in one line with OpenSSL's reason, rather than being retried as a Redis not up yet.
    @Test("a Redis whose certificate TLS refuses, or a TLS port behind redis://, stops a service at start in one line")
    func refusedRedisCertificateIsOneLine() async throws {
        let server = try await RedisServer.startTLS()
        defer { server.stop() }
        let tls = try #require(server.tls)
        let other = try TestCertificates.authority(
            in: FileManager.default.temporaryDirectory.appendingPathComponent("other-ca-\(UUID().uuidString)"))
        let plaintextURL = "redis://127.0.0.1:\(server.port)/0"
        let cases: [(service: String, environment: [String], says: String)] = [
            (
                "verifier",
                [
                    "REDIS_URL=\(server.url)", "REDIS_TLS_CA_FILE=\(other.ca)", "REDIS_TLS_CERT_FILE=\(tls.client!.certificate)",
                    "REDIS_TLS_KEY_FILE=\(tls.client!.key)",
                ],
                "certificate verify failed"
            ),
            ("scheduler", ["REDIS_URL=\(server.url)", "REDIS_TLS_CA_FILE=\(tls.ca)"], "certificate required"),
            ("attribution-winner", ["REDIS_URL=\(plaintextURL)"], "use rediss://"),
        ]
        for (service, environment, says) in cases {
            let result = try Self.run(service, environment: environment)
            let errors = String(decoding: result.stderr, as: UTF8.self)
            #expect(result.status == 2, "\(service): \(errors)")
            let lines = errors.split(separator: "\n")
            #expect(lines.count == 1 && lines[0].hasPrefix("configuration REDIS_URL: ") && lines[0].contains(says), "\(errors)")
        }
    }

    @Test(arguments: badConfigurations)
    func badConfigurationIsOneLineAndExitTwo(service: String, setting: String, line: String) throws {
        let result = try Self.run(service, environment: setting.split(separator: " ").map(String.init))
        let errors = String(decoding: result.stderr, as: UTF8.self)
        #expect(result.status == 2, "\(service): \(errors)")
        // One line: nothing logged before it (a generated key's warning comes only once every setting read).
        #expect(errors.split(separator: "\n").map(String.init) == [line], "\(errors)")
        #expect(!errors.contains("Fatal error") && !errors.contains("Backtrac"))
    }
}

/// `attribution summary` against a receiver's file: an advertiser's copy is not the ad network's
/// postback, and `--expected` fails on a per-network difference the totals would hide.
@Suite("Postback summary")
struct PostbackSummaryTests {
    static func line(network: Int, didWin: Bool, path: String) -> String {
        let payload =
            #"{"ad-network-identifier":"sim-network-\#(network).adattributionkit","advertised-item-identifier":1108187390,"#
            + #""conversion-type":"download","did-win":\#(didWin),"impression-type":"app-impression","#
            + #""marketplace-identifier":"com.apple.AppStore","#
            + #""postback-identifier":"p-\#(network)-\#(didWin)","postback-sequence-index":0,"source-identifier":"96"}"#
        return #"{"path":"\#(path)","payload":\#(payload)}"#
    }

    static func expected(winning: (Int, Int), nonWinning: (Int, Int)) -> String {
        func network(_ n: Int, _ won: Int, _ lost: Int) -> String {
            #"{"ad-network-identifier":"sim-network-\#(n).adattributionkit","impressions":1,"expected-winning":[\#(won),0,0],"expected-non-winning":\#(lost)}"#
        }
        return #"{"seed":1,"time-scale":1,"devices":2,"impressions":{"click":2,"view":0,"total":2},"#
            + #""installs":{"download":1,"redownload":0,"total":1,"attributed":1},"updates":{"first":1,"second":0,"second-late":0},"#
            + #""expected-winning":[1,0,0],"expected-non-winning":1,"ad-networks":["#
            + network(1, winning.0, nonWinning.0) + "," + network(2, winning.1, nonWinning.1) + "]}"
    }

    @Test func copiesAreNotCountedAndEachNetworkIsCompared() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("summary-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // Network 1 won (its postback and the advertiser's copy of it), network 2 lost.
        let received =
            [
                Self.line(network: 1, didWin: true, path: "/postbacks"),
                Self.line(network: 1, didWin: true, path: "/.well-known/appattribution/report-attribution/"),
                Self.line(network: 2, didWin: false, path: "/postbacks"),
            ].joined(separator: "\n") + "\n"
        let file = directory.appendingPathComponent("postbacks.jsonl")
        try Data(received.utf8).write(to: file)
        let tool = PipelineProcesses.binaryDirectory().appendingPathComponent("attribution")
        let tally = try ChildProcess.run(tool, arguments: ["summary", "--file", file.path, "--json"])
        let totals = (try JSONSerialization.jsonObject(with: tally.stdout) as? [String: Any])?["totals"] as? [String: Any]
        #expect(totals?["winning"] as? [Int] == [1, 0, 0] && totals?["non-winning"] as? [Int] == [1, 0, 0], "\(totals ?? [:])")

        for (winning, nonWinning, status) in [((1, 0), (0, 1), Int32(0)), ((0, 1), (1, 0), Int32(1))] {
            let expectation = directory.appendingPathComponent("expected.json")
            try Data(Self.expected(winning: winning, nonWinning: nonWinning).utf8).write(to: expectation)
            let compared = try ChildProcess.run(
                tool, arguments: ["summary", "--file", file.path, "--expected", expectation.path])
            let output = String(decoding: compared.stdout, as: UTF8.self)
            #expect(compared.status == status, "\(output)\(String(decoding: compared.stderr, as: UTF8.self))")
            #expect(output.contains("MISMATCH") == (status != 0), "\(output)")
        }
    }
}
