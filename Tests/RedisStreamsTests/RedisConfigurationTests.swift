import RedisStreams
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
    func defaults() {
        let configuration = RedisConfiguration()
        #expect(configuration.url == "redis://127.0.0.1:6379/0")
        #expect(configuration.commandTimeoutMilliseconds > 1_000)
    }
}
