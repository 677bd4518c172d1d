import AttributionModel
import Foundation
import ServiceRuntime
import Testing

/// Every kind of configuration key, read the way the services read it: a good value, the default when
/// unset or empty, a value out of range, and text that is not a value at all.
@Suite("Configuration catalog: typed keys, defaults and ranges")
struct ConfigurationCatalogTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        /// The environment to read from.
        let environment: [String: String]
        /// The value rendered as text, or the `ConfigurationError` line a service would print.
        let expected: String
        let read: @Sendable (ServiceEnvironment) throws -> String

        var testDescription: String { name }
    }

    /// A case reading `key` from `text` (nil: unset), rendering its value with `render`.
    static func reading<Value>(
        _ key: ConfigurationKey.Typed<Value>, _ text: String?, _ expected: String,
        render: @escaping @Sendable (Value) -> String = { "\($0)" }
    ) -> Case {
        Case(
            name: "\(key.name)=\(text.map { "\"\($0)\"" } ?? "unset")", environment: text.map { [key.name: $0] } ?? [:],
            expected: expected, read: { environment in render(try environment.value(key)) })
    }

    /// ingest's admin token: `ADMIN_TOKEN` (nil: unset), or a file holding `file` named by `ADMIN_TOKEN_FILE`.
    static func adminToken(_ token: String?, file: String?, _ expected: String) -> Case {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("admin-token-\(UUID().uuidString)").path
        var environment: [String: String] = token.map { ["ADMIN_TOKEN": $0] } ?? [:]
        if file != nil { environment["ADMIN_TOKEN_FILE"] = path }
        return Case(
            name: "ADMIN_TOKEN=\(token.map { "\"\($0)\"" } ?? "unset"), file \(file.map { "\"\($0)\"" } ?? "unset")",
            environment: environment, expected: expected,
            read: { environment in
                if let file { try Data(file.utf8).write(to: URL(fileURLWithPath: path)) }
                defer { try? FileManager.default.removeItem(atPath: path) }
                return try environment.secret(.adminToken, orFile: .adminTokenFile)
            })
    }

    static let hours: @Sendable (Duration) -> String = { "\($0.components.seconds / 3_600) h" }
    static let pid = ProcessInfo.processInfo.processIdentifier
    static let host = ProcessInfo.processInfo.hostName

    static let cases: [Case] = [
        // integer
        reading(.batchSize, "250", "250"),
        reading(.batchSize, nil, "200"),
        reading(.batchSize, "", "200"),
        reading(.batchSize, "0", "configuration BATCH_SIZE: must be an integer in 1...10000, got 0"),
        reading(.batchSize, "10001", "configuration BATCH_SIZE: must be an integer in 1...10000, got 10001"),
        reading(.batchSize, "ten", "configuration BATCH_SIZE: must be an integer in 1...10000, got ten"),
        reading(.maxAttempts, nil, "3"),
        reading(.deliveryConcurrencyPerHost, "1000", "1000"),
        reading(
            .deliveryConcurrencyPerHost, "1001",
            "configuration DELIVERY_CONCURRENCY_PER_HOST: must be an integer in 1...1000, got 1001"),
        // bytes
        reading(.maxBodyBytes, "1024", "1024"),
        reading(.maxBodyBytes, nil, "65536"),
        reading(.maxBodyBytes, "1023", "configuration MAX_BODY_BYTES: must be an integer in 1024...16777216, got 1023"),
        reading(.maxBodyBytes, "64k", "configuration MAX_BODY_BYTES: must be an integer in 1024...16777216, got 64k"),
        // milliseconds
        reading(.claimIdleMilliseconds, "2000", "2000"),
        reading(.claimIdleMilliseconds, nil, "30000"),
        reading(.claimIdleMilliseconds, "0", "configuration CLAIM_IDLE_MS: must be an integer in 1...86400000, got 0"),
        reading(.claimIdleMilliseconds, "2s", "configuration CLAIM_IDLE_MS: must be an integer in 1...86400000, got 2s"),
        reading(.conversionSettleMilliseconds, "0", "0"),
        reading(.conversionSettleMilliseconds, nil, "2000"),
        reading(.windowCloseGraceMilliseconds, nil, "10000"),
        reading(
            .windowCloseGraceMilliseconds, "-1", "configuration WINDOW_CLOSE_GRACE_MS: must be an integer in 0...3600000, got -1"),
        reading(.timerPollMilliseconds, nil, "100"),
        reading(.deliveryTimeoutMilliseconds, nil, "10000"),
        reading(
            .httpIdleTimeoutMilliseconds, "99", "configuration HTTP_IDLE_TIMEOUT_MS: must be an integer in 100...3600000, got 99"),
        // hours (real-world durations; the caller scales them or not)
        reading(.streamRetentionHours, "0", "0 h", render: hours),
        reading(.streamRetentionHours, nil, "24 h", render: hours),
        reading(.streamRetentionHours, "8761", "configuration STREAM_RETENTION_HOURS: must be an integer in 0...8760, got 8761"),
        reading(
            .streamRetentionHours, "a day", "configuration STREAM_RETENTION_HOURS: must be an integer in 0...8760, got a day"),
        reading(.keyRotationGraceHours, nil, "72 h", render: hours),
        reading(.signingKeyGraceHours, "217", "217 h", render: hours),
        reading(.signingKeyGraceHours, nil, "240 h", render: hours),
        reading(
            .signingKeyGraceHours, "216", "configuration SIGNING_KEY_GRACE_HOURS: must be an integer in 217...87600, got 216"),
        // port: its default depends on the service
        reading(.httpPort, "8081", "8081 8081", render: { "\($0.port(for: "ingest")) \($0.port(for: "verifier"))" }),
        reading(.httpPort, nil, "8080 9090", render: { "\($0.port(for: "ingest")) \($0.port(for: "verifier"))" }),
        reading(.httpPort, "65536", "configuration HTTP_PORT: must be an integer in 0...65535, got 65536"),
        reading(.httpPort, "http", "configuration HTTP_PORT: must be an integer in 0...65535, got http"),
        // time scale
        reading(.timeScale, "86400", "86400.0", render: { "\($0.scale)" }),
        reading(.timeScale, nil, "1.0", render: { "\($0.scale)" }),
        reading(.timeScale, "0", "configuration TIME_SCALE: must be a positive number, got 0"),
        reading(.timeScale, "inf", "configuration TIME_SCALE: must be a positive number, got inf"),
        reading(.timeScale, "fast", "configuration TIME_SCALE: must be a positive number, got fast"),
        // URL
        reading(.redisURL, "redis://redis:6380/2", "redis://redis:6380/2", render: { $0.url }),
        reading(.redisURL, nil, "redis://127.0.0.1:6379/0", render: { $0.url }),
        reading(
            .redisURL, "http://redis",
            "configuration REDIS_URL: redis invalidConfiguration: redis URL must start with redis:// or rediss:// (TLS): http://redis"
        ),
        reading(
            .redisURL, "redis://redis:0",
            "configuration REDIS_URL: redis invalidConfiguration: redis URL has an invalid port: redis://redis:0"
        ),
        // the crowd thresholds triple
        reading(.crowdTierThresholds, "1,5,20", "1 5 20", render: { "\($0.tier1) \($0.tier2) \($0.tier3)" }),
        reading(.crowdTierThresholds, nil, "10 100 1000", render: { "\($0.tier1) \($0.tier2) \($0.tier3)" }),
        reading(
            .crowdTierThresholds, "3,2,1", "configuration CROWD_TIER_THRESHOLDS: must be three ascending integers, got 3,2,1"),
        reading(
            .crowdTierThresholds, "10,100", "configuration CROWD_TIER_THRESHOLDS: must be three ascending integers, got 10,100"),
        reading(
            .crowdTierThresholds, "a,b,c", "configuration CROWD_TIER_THRESHOLDS: must be three ascending integers, got a,b,c"),
        // log level: an unknown level means the default, as it always has
        reading(.logLevel, "debug", "debug"),
        reading(.logLevel, nil, "info"),
        reading(.logLevel, "loud", "info"),
        // strings, secrets, paths, host lists
        adminToken(String(repeating: "k", count: 32), file: nil, String(repeating: "k", count: 32)),
        adminToken("s3cret", file: nil, "configuration ADMIN_TOKEN: must be at least 32 characters, got 6"),
        adminToken(
            String(repeating: "k", count: 31), file: nil, "configuration ADMIN_TOKEN: must be at least 32 characters, got 31"),
        adminToken(nil, file: nil, "configuration ADMIN_TOKEN: is required (or ADMIN_TOKEN_FILE)"),
        adminToken("", file: nil, "configuration ADMIN_TOKEN: is required (or ADMIN_TOKEN_FILE)"),
        adminToken(nil, file: String(repeating: "f", count: 32) + "\n", String(repeating: "f", count: 32)),
        adminToken(nil, file: "s3cret\n", "configuration ADMIN_TOKEN_FILE: must be at least 32 characters, got 6"),
        adminToken(nil, file: "\n", "configuration ADMIN_TOKEN_FILE: must be at least 32 characters, got 0"),
        adminToken(
            String(repeating: "k", count: 32), file: String(repeating: "f", count: 32),
            "configuration ADMIN_TOKEN_FILE: set it or ADMIN_TOKEN, not both"),
        Case(
            name: "ADMIN_TOKEN_FILE names no file", environment: ["ADMIN_TOKEN_FILE": "/nonexistent/admin-token"],
            expected: "configuration ADMIN_TOKEN_FILE: cannot read /nonexistent/admin-token",
            read: { try $0.secret(.adminToken, orFile: .adminTokenFile) }),
        reading(.httpHost, nil, "127.0.0.1"),
        reading(.signingKeyID, nil, "attribution-pipeline/0"),
        reading(.developmentSigningKeyID, nil, "attribution-pipeline-development/0"),
        reading(.testSigningKeyID, nil, "attribution-pipeline-test/0"),
        reading(.signingKeyFile, "/keys/pipeline.pem", "/keys/pipeline.pem", render: { $0 ?? "nil" }),
        reading(.signingKeyFile, nil, "nil", render: { $0 ?? "nil" }),
        reading(.consumerName, "scheduler-1", "scheduler-1"),
        reading(.consumerName, nil, "\(host)-\(pid)"),
        reading(
            .postbackURLAllowList, "receiver:8080, Example.com", "example.com receiver:8080",
            render: { $0.allowedHosts.sorted().joined(separator: " ") }),
        reading(.postbackURLAllowList, nil, "", render: { $0.allowedHosts.sorted().joined(separator: " ") }),
    ]

    @Test(arguments: cases)
    func reads(_ testCase: Case) {
        let environment = ServiceEnvironment(testCase.environment)
        let outcome: String
        do { outcome = try testCase.read(environment) } catch { outcome = "\(error)" }
        #expect(outcome == testCase.expected)
    }

    /// A key whose table row shows an integer range, with the bounds that row shows.
    struct Bounds: Sendable, CustomTestStringConvertible {
        let key: ConfigurationKey
        /// Whether `text` reads without a problem.
        let accepts: @Sendable (String) -> Bool

        init<Value>(_ typed: ConfigurationKey.Typed<Value>) {
            key = typed.key
            accepts = { text in (try? ServiceEnvironment([typed.name: text]).value(typed)) != nil }
        }

        var testDescription: String { key.name }
    }

    static let ranged: [Bounds] = [
        Bounds(.httpPort), Bounds(.httpIdleTimeoutMilliseconds), Bounds(.batchSize), Bounds(.claimIdleMilliseconds),
        Bounds(.maxAttempts), Bounds(.streamRetentionHours), Bounds(.maxBodyBytes), Bounds(.keyRotationGraceHours),
        Bounds(.timerPollMilliseconds), Bounds(.conversionSettleMilliseconds), Bounds(.windowCloseGraceMilliseconds),
        Bounds(.deliveryTimeoutMilliseconds), Bounds(.deliveryConcurrencyPerHost), Bounds(.signingKeyGraceHours),
    ]

    /// The configuration reference's allowed column and the parser's check cannot disagree: both bounds read, one past
    /// either does not, and the documented default is inside.
    @Test(arguments: ranged)
    func documentedRangeIsTheCheckedRange(_ bounds: Bounds) throws {
        let allowed = try #require(bounds.key.allowed)
        let parts = allowed.split(separator: "–").compactMap { Int($0) }
        try #require(parts.count == 2, "\(allowed) reads as lower–upper")
        #expect(bounds.accepts(String(parts[0])))
        #expect(bounds.accepts(String(parts[1])))
        #expect(!bounds.accepts(String(parts[0] - 1)))
        #expect(!bounds.accepts(String(parts[1] + 1)))
        if let defaultValue = bounds.key.defaultValue, let number = Int(defaultValue) {
            #expect(bounds.accepts(String(number)))
        }
    }

    /// A default written out in the table reads as the value an unset key gets.
    @Test func documentedDefaultsReadAsTheDefaults() throws {
        func same<Value: Equatable>(_ key: ConfigurationKey.Typed<Value>) throws -> Bool {
            let text = try #require(key.key.defaultValue)
            return try ServiceEnvironment([key.name: text]).value(key) == ServiceEnvironment([:]).value(key)
        }
        #expect(try same(.redisURL))
        #expect(try same(.timeScale))
        #expect(try same(.logLevel))
        #expect(try same(.httpHost))
        #expect(try same(.httpIdleTimeoutMilliseconds))
        #expect(try same(.batchSize))
        #expect(try same(.claimIdleMilliseconds))
        #expect(try same(.maxAttempts))
        #expect(try same(.streamRetentionHours))
        #expect(try same(.maxBodyBytes))
        #expect(try same(.keyRotationGraceHours))
        #expect(try same(.crowdTierThresholds))
        #expect(try same(.timerPollMilliseconds))
        #expect(try same(.conversionSettleMilliseconds))
        #expect(try same(.windowCloseGraceMilliseconds))
        #expect(try same(.signingKeyID))
        #expect(try same(.developmentSigningKeyID))
        #expect(try same(.deliveryTimeoutMilliseconds))
        #expect(try same(.deliveryConcurrencyPerHost))
        #expect(try same(.signingKeyGraceHours))
    }

    @Test func catalogNamesAreUniqueAndEveryKeyHasAReader() {
        let names = ConfigurationKey.all.map(\.name)
        #expect(Set(names).count == names.count)
        for key in ConfigurationKey.all { #expect(!key.services.isEmpty, "\(key.name) is read by some service") }
    }
}
