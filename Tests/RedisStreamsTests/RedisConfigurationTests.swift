import RedisStreams
import TestSupport
import Testing

@Suite("RedisConfiguration URL parsing")
struct RedisConfigurationTests {
    struct ValidCase: Sendable, CustomTestStringConvertible {
        let url: String
        let host: String
        let port: Int
        let database: Int
        var testDescription: String { self.url }
    }

    static let validCases: [ValidCase] = [
        ValidCase(url: "redis://127.0.0.1:6379/0", host: "127.0.0.1", port: 6379, database: 0),
        ValidCase(url: "redis://localhost", host: "localhost", port: 6379, database: 0),
        ValidCase(url: "redis://redis:6380", host: "redis", port: 6380, database: 0),
        ValidCase(url: "redis://cache.internal:7000/3", host: "cache.internal", port: 7000, database: 3),
        ValidCase(url: "redis://h/5", host: "h", port: 6379, database: 5),
        ValidCase(url: "redis://h:1/", host: "h", port: 1, database: 0),
        ValidCase(url: "redis://h:65535/15", host: "h", port: 65535, database: 15),
        ValidCase(url: "redis://[::1]:6390/2", host: "::1", port: 6390, database: 2),
        ValidCase(url: "redis://[::1]", host: "::1", port: 6379, database: 0),
    ]

    @Test("valid URLs", arguments: validCases)
    func parsesValidURL(_ valid: ValidCase) throws {
        let configuration = try RedisConfiguration(url: valid.url)
        #expect(configuration.host == valid.host)
        #expect(configuration.port == valid.port)
        #expect(configuration.database == valid.database)
        // The canonical form parses back to the same thing.
        #expect(try RedisConfiguration(url: configuration.url) == configuration)
    }

    @Test(
        "invalid URLs",
        arguments: [
            "", "http://h:1/0", "redis://", "redis:///0", "redis://h:", "redis://h:port", "redis://h:0",
            "redis://h:70000", "redis://h:1/x", "redis://h:1/-1", "redis://user:pw@h", "redis://[::1",
            "redis://[::1]x",
        ]
    )
    func rejectsInvalidURL(_ url: String) {
        #expect {
            try RedisConfiguration(url: url)
        } throws: { error in
            (error as? RedisError)?.code == .invalidConfiguration
        }
    }

    @Test("defaults")
    func defaults() throws {
        let configuration = RedisConfiguration()
        #expect(configuration.url == "redis://127.0.0.1:6379/0")
        #expect(configuration.commandTimeoutMilliseconds > 1_000)
        #expect(!configuration.cluster, "single node unless asked")
        #expect(!configuration.checksSlots, "no slot computation unless asked")
        try configuration.validate()
        // A URL does not say cluster: that switch is its own configuration key.
        #expect(try !RedisConfiguration(url: "redis://h:7000/0").cluster)
    }

    @Test("cluster mode allows database 0 only")
    func clusterDatabase() throws {
        var configuration = try RedisConfiguration(url: "redis://seed:7000/0")
        configuration.cluster = true
        try configuration.validate()

        configuration.database = 2
        #expect {
            try configuration.validate()
        } throws: { error in
            let error = error as? RedisError
            return error?.code == .invalidConfiguration && error?.message.contains("database 0") == true
        }
        configuration.cluster = false
        try configuration.validate()
    }

    @Test("cluster and checksSlots take part in equality")
    func equality() {
        var cluster = RedisConfiguration()
        cluster.cluster = true
        var checked = RedisConfiguration()
        checked.checksSlots = true
        #expect(cluster != RedisConfiguration())
        #expect(checked != RedisConfiguration())
        #expect(cluster != checked)
    }

    @Test("a cluster connection with a database other than 0 throws before connecting")
    func clusterDatabaseAtFirstUse() async throws {
        var configuration = RedisConfiguration(host: "127.0.0.1", port: 1, database: 1)
        configuration.cluster = true
        let connection = RedisConnection(configuration: configuration, logger: .test("test"))
        await #expect {
            try await connection.send(RedisCommand("PING"))
        } throws: { error in
            (error as? RedisError)?.code == .invalidConfiguration
        }
        await connection.close()
    }
}
