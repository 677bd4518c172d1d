import Foundation
import Logging

/// How services write their log lines (`LOG_FORMAT`).
public enum LogFormat: String, Sendable, CaseIterable {
    /// swift-log's `StreamLogHandler` lines: `<time> <level> <label>: <metadata> [<source>] <message>`.
    case text
    /// One JSON object per line, for log collectors: `time` (ISO 8601, UTC, milliseconds), `level`,
    /// `label` (the service), `source`, `message`, and each metadata key as a member of its own (a
    /// member named like one of those five is prefixed `metadata.`).
    case json
}

/// Writes each log event as one JSON line to standard error (`LOG_FORMAT=json`), with the same
/// metadata as the text form: the logger's, then the message's, which wins.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata = Logger.Metadata()
    var metadataProvider: Logger.MetadataProvider?

    init(label: String) { self.label = label }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { $1 } }
        if let own = event.metadata { all.merge(own) { $1 } }
        var line = Self.line(
            time: Date(), level: event.level, label: label, source: event.source, message: "\(event.message)", metadata: all)
        line.append(0x0A)
        FileHandle.standardError.write(Data(line))
    }

    static let reserved: Set<String> = ["time", "level", "label", "source", "message"]

    /// The JSON line (without its newline).
    static func line(
        time: Date, level: Logger.Level, label: String, source: String, message: String, metadata: Logger.Metadata
    ) -> [UInt8] {
        var object: [String: Any] = [
            "time": time.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)),
            "level": level.rawValue, "label": label, "source": source, "message": message,
        ]
        for (key, value) in metadata {
            object[reserved.contains(key) ? "metadata.\(key)" : key] = json(value)
        }
        let data =
            (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return Array(data)
    }

    private static func json(_ value: Logger.Metadata.Value) -> Any {
        switch value {
        case .string(let text): text
        case .stringConvertible(let convertible): convertible.description
        case .array(let values): values.map(json)
        case .dictionary(let dictionary): dictionary.mapValues(json)
        }
    }
}
