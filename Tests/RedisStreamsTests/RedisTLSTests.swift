import Foundation
import RedisStreams
import TestSupport
import Testing

/// Redis over TLS on a real redis-server that listens on TLS only (`--port 0 --tls-port`), with a CA and
/// certificates the test makes with `openssl` (`TestCertificates`): round trips as in plaintext, and every
/// certificate problem refused at connecting with its reason, quickly, never carried on in plaintext.
@Suite("Redis over TLS")
struct RedisTLSTests {
    @Test("a TLS-only Redis demanding client certificates: commands, large values across many records, concurrent callers")
    func roundTrips() async throws {
        let server = try await RedisServer.startTLS(password: "secret-password")
        defer { server.stop() }
        #expect(server.url.hasPrefix("rediss://"))
        let redis = server.connect()
        defer { Task { await redis.close() } }
        let large = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 9) }
        let replies = try await redis.pipeline([
            RedisCommand("SET", "large").appending(large), RedisCommand("GET", "large"), RedisCommand("ACL", "WHOAMI"),
        ])
        #expect(replies[0] == .status("OK") && replies[1] == .bulk(large))
        #expect(replies[2].string == "default", "AUTH went over the TLS connection")
        let answers = try await withThrowingTaskGroup(of: (Int, RedisReply).self) { group in
            for caller in 0..<50 {
                group.addTask { (caller, try await redis.pipeline([RedisCommand("ECHO", "caller \(caller)")])[0]) }
            }
            return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        #expect(answers.count == 50 && answers.allSatisfy { $0.value.string == "caller \($0.key)" })
        // A name the certificate carries, given instead of the address.
        var byName = server.configuration
        byName.host = "localhost"
        #expect(
            try await RedisConnection(configuration: byName, logger: .test("name")).send(RedisCommand("PING")) == .status("PONG"))
    }

    /// A Redis Cluster on TLS only, between its nodes too (`tls-cluster`), demanding client
    /// certificates: every node reached over TLS as the cluster announces it (its TLS port), a pipeline
    /// across every primary, a transaction, and the same after a primary is killed and its replica
    /// promoted.
    @Test("a TLS-only Redis Cluster: routed pipelines and transactions, through a failover")
    func cluster() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("redis-tls-cluster-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        var options = RedisCluster.Options()
        options.tls = try RedisServer.TLS.made(in: folder)
        let cluster = try await RedisCluster.start(options)
        defer { cluster.stop() }
        #expect(cluster.configuration.url.hasPrefix("rediss://"))
        let redis = cluster.connect()
        defer { Task { await redis.close() } }
        // Keys in every primary's slots (the hash tags spread them), written and read in one pipeline.
        let keys = (0..<60).map { "tls:{\($0)}" }
        func roundTrip(_ value: String) async throws {
            let replies = try await redis.pipeline(
                keys.map { RedisCommand("SET", $0, value) } + keys.map { RedisCommand("GET", $0) })
            #expect(replies.prefix(keys.count).allSatisfy { $0 == .status("OK") })
            #expect(replies.suffix(keys.count).allSatisfy { $0.string == value })
            let transaction = try await redis.pipeline([
                RedisCommand("MULTI"), RedisCommand("INCR", "tls:{0}:count"), RedisCommand("INCR", "tls:{0}:count"),
                RedisCommand("EXEC"),
            ])
            #expect(transaction.last?.elements.count == 2)
        }
        try await roundTrip("before")
        let topology = try await cluster.topology()
        let primaries = Set(keys.compactMap { topology.node(forSlot: ClusterSlot.slot(of: $0))?.port })
        #expect(primaries.count == 3, "the keys span every primary")
        _ = try await cluster.failOver()
        // The first calls may fail, as in plaintext: the router drops the dead node and reloads the map.
        var failures: [String] = []
        let served = try await eventually(timeout: .seconds(15), every: .milliseconds(100)) {
            do {
                try await roundTrip("after")
                return true
            } catch let error as RedisError {
                failures.append("\(error.code)")
                return false
            }
        }
        #expect(served, "served again after the failover; failures: \(failures)")
        #expect(Set(failures).isSubset(of: ["connectionFailed", "io", "server"]), "\(failures)")
    }

    /// What each problem must be refused with: OpenSSL's reason, or the hint for a TLS port spoken to in
    /// plaintext; each as `tlsFailed`, never `io` on a command, and never later than the command timeout.
    /// A plaintext port spoken to in TLS answers nothing: a timeout (`io`) with a hint.
    @Test(
        "unknown CA, wrong name, expired, no client certificate, plaintext server, TLS server in plaintext: refused with the reason"
    )
    func certificateProblemsAreRefused() async throws {
        let server = try await RedisServer.startTLS()
        defer { server.stop() }
        try #require(server.tls != nil)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("redis-tls-other-\(UUID().uuidString)")
        let other = try TestCertificates.authority(in: folder, name: "another CA")
        let plaintext = try await RedisServer.start()
        defer { plaintext.stop() }

        var unknownCA = server.configuration
        unknownCA.tls?.trustRoots = .file(other.ca)
        var wrongName = server.configuration
        wrongName.tlsServerName = "other.test"
        var noClientCertificate = server.configuration
        noClientCertificate.tls?.certificateChainFile = nil
        noClientCertificate.tls?.privateKeyFile = nil
        var plaintextServer = plaintext.configuration
        plaintextServer.tls = server.configuration.tls
        var tlsServerInPlaintext = server.configuration
        tlsServerInPlaintext.tls = nil

        let cases: [(String, RedisConfiguration, String)] = [
            ("unknown CA", unknownCA, "certificate verify failed"),
            ("wrong name", wrongName, "hostname mismatch"),
            ("no client certificate", noClientCertificate, "certificate required"),
            ("TLS server in plaintext", tlsServerInPlaintext, "use rediss://"),
        ]
        // A plaintext server behind rediss:// answers nothing: a timeout with a hint, retried as any.
        var plaintextConfiguration = plaintextServer
        plaintextConfiguration.commandTimeoutMilliseconds = 1_000
        let silent = await #expect(throws: RedisError.self) {
            try await RedisConnection(configuration: plaintextConfiguration, logger: .test("plaintext")).send(
                RedisCommand("PING"))
        }
        #expect(silent?.code == .io && silent?.description.contains("a plaintext server behind a rediss:// URL?") == true)
        for (name, configuration, reason) in cases {
            var configuration = configuration
            configuration.commandTimeoutMilliseconds = 3_000
            let started = ContinuousClock.now
            let error = await #expect(throws: RedisError.self, "\(name)") {
                try await RedisConnection(configuration: configuration, logger: .test(name)).send(RedisCommand("PING"))
            }
            #expect(error?.code == .tlsFailed, "\(name): \(String(describing: error))")
            #expect(error?.description.contains(reason) == true, "\(name): \(String(describing: error))")
            #expect(ContinuousClock.now - started < .seconds(4), "\(name): refused by the command timeout at the latest")
        }
        // The certificate of a server that expired: valid only the second it was made.
        let issuer = try TestCertificates.authority(in: folder.appendingPathComponent("expired"))
        let expired = try await RedisServer.start(
            tls: .init(server: try issuer.issue("server", addresses: ["127.0.0.1"], expired: true), ca: issuer.ca))
        defer { expired.stop() }
        try await Task.sleep(for: .milliseconds(1_100))
        let error = await #expect(throws: RedisError.self) {
            try await expired.connect(label: "expired").send(RedisCommand("PING"))
        }
        #expect(error?.description.contains("certificate has expired") == true, "\(String(describing: error))")
    }

    @Test("over TLS too, a WATCH lost with its socket fails the next call instead of a transaction on a new socket")
    func lostWatchOverTLS() async throws {
        let server = try await RedisServer.startTLS()
        defer { server.stop() }
        try await RedisConnectionTests.expectLostWatchFailsTheNextCall(redis: server.connect(), admin: server.connect())
    }

    @Test("TLS settings: only with rediss://, files loaded at once, a certificate only with its key")
    func settings() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("redis-tls-settings-\(UUID().uuidString)")
        let authority = try TestCertificates.authority(in: folder)
        let client = try authority.issue("client")
        var plaintext = try RedisConfiguration(url: "redis://127.0.0.1:6379/0")
        #expect(plaintext.tls == nil)
        #expect(throws: RedisConfiguration.TLSProblem.self) {
            try plaintext.applyTLS(caFile: authority.ca, certificateFile: nil, keyFile: nil, serverName: nil)
        }
        var secure = try RedisConfiguration(url: "rediss://user:pass@redis.example:6380/2")
        #expect(secure.url == "rediss://user@redis.example:6380/2" && secure.tls != nil)
        func problem(_ ca: String?, _ certificate: String?, _ key: String?) -> RedisConfiguration.TLSSetting? {
            var configuration = secure
            do {
                try configuration.applyTLS(caFile: ca, certificateFile: certificate, keyFile: key, serverName: nil)
                return nil
            } catch {
                return error.setting
            }
        }
        #expect(problem("/nonexistent/ca.pem", nil, nil) == .caFile)
        #expect(problem(authority.ca, client.certificate, nil) == .certificateFile)
        #expect(problem(authority.ca, nil, client.key) == .keyFile)
        #expect(problem(authority.ca, client.certificate, authority.ca) == .keyFile)
        try secure.applyTLS(
            caFile: authority.ca, certificateFile: client.certificate, keyFile: client.key, serverName: "redis.internal")
        #expect(secure.tls?.trustRoots == .file(authority.ca) && secure.tlsServerName == "redis.internal")
    }
}
