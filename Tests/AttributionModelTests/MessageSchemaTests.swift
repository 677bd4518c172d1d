import AttributionModel
import Foundation
import TestSupport
import Testing

/// The published message schemas (docs/reference/messages/) held to the model's types: every message
/// type has one, and every type's messages, with every optional member and with none, validate under
/// Python's `jsonschema` (scripts/message_schemas.py), while a message with a member the schema does not
/// know, or without one it requires, does not.
@Suite("Message schemas ↔ the model's messages")
struct MessageSchemaTests {
    static let root = ScenarioFiles.repositoryRoot
    static let folder = root.appendingPathComponent("docs/reference/messages")

    /// scripts/message_schemas.py on `lines` (JSON lines of envelopes): its exit status and output.
    static func validate(_ lines: String) throws -> (status: Int32, output: String) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("messages-\(UUID().uuidString).jsonl")
        try lines.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try ChildProcess.run(
            URL(fileURLWithPath: "/usr/bin/env"),
            arguments: ["python3", root.appendingPathComponent("scripts/message_schemas.py").path, file.path])
        return (result.status, String(decoding: result.stdout + result.stderr, as: UTF8.self))
    }

    @Test func everyMessageTypeHasItsSchema() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.folder.path).filter {
            $0.hasSuffix(".schema.json") && $0 != "definitions.schema.json"
        }
        #expect(Set(names) == Set(MessageType.allCases.map { "\($0.rawValue).schema.json" }))
        let sampled = Set((MessageSamples.bodies(full: true) + MessageSamples.bodies(full: false)).map(\.type))
        #expect(sampled == Set(MessageType.allCases), "the samples cover every type")
    }

    @Test func theRejectionReasonsAreTheModels() throws {
        let data = try Data(contentsOf: Self.folder.appendingPathComponent("definitions.schema.json"))
        let definitions = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let reason = try #require((definitions["$defs"] as? [String: Any])?["rejection-reason"] as? [String: Any])
        let listed = try #require(reason["enum"] as? [String])
        #expect(listed == ProblemReason.allCases.filter { $0.channels.contains(.rejection) }.map(\.rawValue))
    }

    @Test func everySampleValidates() throws {
        let run = try Self.validate(MessageSamples.jsonLines)
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("\(2 * MessageType.allCases.count) messages, 0 problems"), "\(run.output)")
    }

    @Test func anUnknownMemberOrAMissingOneIsAProblem() throws {
        var lines: [String] = []
        for body in MessageSamples.bodies(full: false) {
            let json = try #require(
                try JSONSerialization.jsonObject(with: Data(Envelope(time: 1, body: body).encoded())) as? [String: Any])
            var unknown = json
            var inner = try #require(json["body"] as? [String: Any])
            inner["surprise"] = true
            unknown["body"] = inner
            var missing = json
            missing["time"] = nil
            for variant in [unknown, missing] {
                lines.append(String(decoding: try JSONSerialization.data(withJSONObject: variant), as: UTF8.self))
            }
        }
        let run = try Self.validate(lines.joined(separator: "\n"))
        #expect(run.status == 1)
        let count = MessageType.allCases.count
        #expect(run.output.contains("\(2 * count) messages, \(2 * count) problems"), "\(run.output)")
    }
}
