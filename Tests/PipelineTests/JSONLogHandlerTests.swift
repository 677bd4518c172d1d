import Foundation
import Logging
import Testing

@testable import ServiceRuntime

/// `LOG_FORMAT=json`'s lines: the five fixed members, metadata as members of their own (nested values
/// as JSON arrays and objects), and a metadata key named like a fixed member kept under `metadata.`.
@Suite("JSON log lines")
struct JSONLogHandlerTests {
    @Test func fixedMembersAndMetadata() throws {
        let line = JSONLogHandler.line(
            time: Date(timeIntervalSince1970: 1_795_000_000.25), level: .warning, label: "ingest", source: "IngestService",
            message: "shed",
            metadata: [
                "reason": "overloaded", "message": "shadowed", "counts": ["a": "1", "b": .array(["x", "y"])],
                "port": .stringConvertible(8080),
            ])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
        #expect(object["time"] as? String == "2026-11-18T11:06:40.250Z")
        #expect(object["level"] as? String == "warning" && object["label"] as? String == "ingest")
        #expect(object["source"] as? String == "IngestService" && object["message"] as? String == "shed")
        #expect(object["reason"] as? String == "overloaded" && object["metadata.message"] as? String == "shadowed")
        #expect(object["port"] as? String == "8080")
        let counts = try #require(object["counts"] as? [String: Any])
        #expect(counts["a"] as? String == "1" && counts["b"] as? [String] == ["x", "y"])
        #expect(!line.contains(0x0A), "one line")
    }
}
