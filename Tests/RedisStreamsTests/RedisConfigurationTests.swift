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
            "redis://h:70000", "redis://h:1/x", "redis://h:1/-1", "redis://user:pw@", "redis://u:%zz@h", "redis://[::1",
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

    /// Credentials: user and password percent-decoded, the password never in `url`.
    @Test(
        "credentials",
        arguments: [
            ("redis://verifier:s3cret@redis:6379/0", "verifier", "s3cret", "redis://verifier@redis:6379/0"),
            ("redis://:only-a-password@h", nil, "only-a-password", "redis://h:6379/0"),
            ("redis://user@h/2", "user", nil, "redis://user@h:6379/2"),
            ("redis://a%40b:p%3Aw%40rd@h", "a@b", "p:w@rd", "redis://a%40b@h:6379/0"),
            ("redis://u:pass@word@h:7000", "u", "pass@word", "redis://u@h:7000/0"),
        ] as [(String, String?, String?, String)]
    )
    func parsesCredentials(url: String, username: String?, password: String?, shown: String) throws {
        let configuration = try RedisConfiguration(url: url)
        #expect(configuration.username == username)
        #expect(configuration.password == password)
        #expect(configuration.url == shown)
        if let password { #expect(!configuration.url.contains(password)) }
    }

    /// A server that requires a password: the right one is sent on every (re)connection; a wrong one
    /// fails with the server's reason and without the password in the message.
    @Test("AUTH on connect, as an ACL user")
    func authenticatesOnConnect() async throws {
        let redis = try await RedisServer.start(
            arguments: ["--user", "reader", "on", ">reader-secret", "~*", "+@read", "+ping"], password: "default-secret")
        defer { redis.stop() }
        var reader = redis.configuration
        reader.username = "reader"
        reader.password = "reader-secret"
        let connection = RedisConnection(configuration: reader, logger: .test("test"))
        #expect(try await connection.send(RedisCommand("PING")).string == "PONG")
        await #expect("the reader may only read") {
            try await connection.send(RedisCommand("SET", "k", "v"))
        } throws: { error in
            (error as? RedisError)?.message.contains("NOPERM") == true
        }
        await connection.close()

        var wrong = reader
        wrong.password = "not-the-secret"
        let failing = RedisConnection(configuration: wrong, logger: .test("test"))
        await #expect {
            try await failing.send(RedisCommand("PING"))
        } throws: { error in
            let message = (error as? RedisError)?.message ?? ""
            return message.contains("WRONGPASS") && !message.contains("not-the-secret")
        }
        await failing.close()
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
