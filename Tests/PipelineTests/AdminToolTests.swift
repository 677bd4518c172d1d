import AttributionCrypto
import Foundation
import TestSupport
import Testing

extension PipelineSuites {
    /// `attribution admin …` against a running admin service: what an operator types instead of curl.
    /// Each command's answer is the admin API's, printed as JSON; a refusal exits non-zero with the
    /// problem's status, reason and detail.
    @Suite("attribution admin")
    struct AdminToolTests {
        struct Run {
            var status: Int32
            var stdout: String
            var stderr: String
            var json: [String: Any] {
                (try? JSONSerialization.jsonObject(with: Data(stdout.utf8))) as? [String: Any] ?? [:]
            }
        }

        @Test func anOperatorRegistersIssuesRevokesAndErasesFromTheCommandLine() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            let pipeline = try PipelineProcesses(redis: redis, timeScale: 1, only: ["ingest"], inProcess: true)
            defer { pipeline.stop() }
            try #require(
                try await HTTPTestClient().waitUntilUp("\(pipeline.adminURL)/health"), "admin started\n\(pipeline.logs())")
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("admin-tool-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let tokenFile = directory.appendingPathComponent("admin-token").path
            try Data(pipeline.adminToken.utf8).write(to: URL(fileURLWithPath: tokenFile))
            let keyFile = directory.appendingPathComponent("network.pem").path
            try Data(SigningKey.generate().publicKey.pemRepresentation.utf8).write(to: URL(fileURLWithPath: keyFile))
            func admin(_ arguments: String..., token: String? = tokenFile) throws -> Run {
                let global = ["--admin-url", pipeline.adminURL] + (token.map { ["--admin-token-file", $0] } ?? [])
                let words = arguments.flatMap { $0.split(separator: " ").map(String.init) }
                // The command path first, then the options every admin command takes.
                let split = words.firstIndex { $0.hasPrefix("--") } ?? words.count
                let run = try ChildProcess.run(
                    PipelineProcesses.binaryDirectory().appendingPathComponent("attribution"),
                    arguments: ["admin"] + words[..<split] + global + words[split...])
                return Run(
                    status: run.status, stdout: String(decoding: run.stdout, as: UTF8.self),
                    stderr: String(decoding: run.stderr, as: UTF8.self))
            }
            let network = "tool.adattributionkit"

            let put = try admin("ad-network put \(network) --public-key \(keyFile) --postback-url https://postbacks.example/tool")
            #expect(put.status == 0, "\(put)")
            let shown = try admin("ad-network get \(network)")
            #expect(shown.status == 0 && shown.json["postback-url"] as? String == "https://postbacks.example/tool", "\(shown)")

            let issued = try admin("ad-network credentials issue \(network)")
            let credential = try #require(issued.json["credential-identifier"] as? String, "\(issued)")
            #expect(try admin("ad-network credentials list \(network)").stdout.contains(credential))
            #expect(try admin("ad-network credentials revoke \(network) \(credential)").status == 0)
            let listed = try admin("ad-network credentials list \(network)")
            #expect(listed.status == 0 && !listed.stdout.contains(credential), "\(listed)")

            #expect(try admin("publisher-app put 5838493 --ad-network \(network)").status == 0)
            let publisher = try admin("publisher-app get 5838493")
            #expect(publisher.json["AdNetworkIdentifiers"] as? [String] == [network], "\(publisher)")
            let appFile = directory.appendingPathComponent("app.json").path
            try Data("{}".utf8).write(to: URL(fileURLWithPath: appFile))
            #expect(try admin("advertised-app put 1108187391 --file \(appFile)").status == 0)
            let key = try admin("advertised-app keys issue 1108187391")
            #expect(key.status == 0 && key.json["app-key"] is String, "\(key)")

            #expect(try admin("dead-letters list").status == 0)
            let erased = try admin("erase-device tool-device-1")
            #expect(erased.status == 0, "\(erased)")

            // Refusals: the API's problem on one line, exit 1; no token at all: refused before any request.
            let unknown = try admin("ad-network get unknown.adattributionkit")
            #expect(unknown.status == 1 && unknown.stderr.contains("404 unknown-ad-network"), "\(unknown)")
            #expect(try admin("ad-network delete \(network)").status == 0)
            let wrongToken = directory.appendingPathComponent("wrong-token").path
            try Data(String(repeating: "x", count: 40).utf8).write(to: URL(fileURLWithPath: wrongToken))
            let refused = try admin("dead-letters list", token: wrongToken)
            #expect(refused.status == 1 && refused.stderr.contains("401"), "\(refused)")
            let missing = try admin("dead-letters list", token: nil)
            #expect(missing.status != 0 && missing.stderr.contains("no admin token"), "\(missing)")
        }
    }
}
