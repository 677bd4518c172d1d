import Logging
import Synchronization
import Testing

@testable import ServiceRuntime

/// The services' log handler defers rendering metadata; what it prints must not change.
@Suite("DeferredMetadataLogHandler prints what StreamLogHandler prints")
struct DeferredMetadataLogHandlerTests {
    /// Collects written lines (the handler writes each line in one call).
    final class Lines: TextOutputStream, Sendable {
        let written = Mutex<[String]>([])
        func write(_ string: String) { written.withLock { $0.append(string) } }
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var loggerMetadata: Logger.Metadata
        var messageMetadata: Logger.Metadata?
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "no metadata", loggerMetadata: [:], messageMetadata: nil),
        Case(name: "the logger's only", loggerMetadata: ["hb.request.id": "7", "a": "1"], messageMetadata: nil),
        Case(name: "the message's only", loggerMetadata: [:], messageMetadata: ["redis.host": "h"]),
        Case(
            name: "both, the message's value winning a shared key", loggerMetadata: ["k": "logger", "z": "2"],
            messageMetadata: ["k": "message", "b": ["nested", "list"]]),
    ]

    @Test("the same line, timestamp aside, for each mix of logger and message metadata", arguments: cases)
    func sameLine(_ row: Case) {
        func line(deferred: Bool) -> String {
            let lines = Lines()
            let stream = StreamLogHandler(label: "ingest", stream: lines, metadataProvider: nil)
            var logger = Logger(label: "ingest") { _ -> any LogHandler in deferred ? DeferredMetadataLogHandler(stream) : stream }
            logger.logLevel = .info
            for (key, value) in row.loggerMetadata { logger[metadataKey: key] = value }
            logger.debug("below the level")
            logger.warning("it happened", metadata: row.messageMetadata)
            let written = lines.written.withLock { $0 }
            #expect(written.count == 1, "\(written)")
            // Drop the timestamp, the text before the first space.
            return String(written.first?.drop { $0 != " " } ?? "")
        }
        #expect(line(deferred: true) == line(deferred: false))
        #expect(line(deferred: true).hasPrefix(" warning ingest:"))
    }
}
