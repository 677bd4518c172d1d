import AttributionCrypto
import AttributionModel
import Foundation
import Logging

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The receiver's output file and its memory: deduplicates on `postback-identifier` (delivery is at
/// least once) and counts what it saw. An actor, so two copies racing in are checked and written
/// one after the other.
actor PostbackLog {
    struct Stats: Codable, Sendable {
        var accepted = 0
        var duplicates = 0
        var rejected = 0
    }

    struct OpenError: Error, CustomStringConvertible {
        var description: String
    }

    private let handle: FileHandle
    private var seen: Set<String>
    private var stats = Stats()

    /// Postback ids already in the file when the receiver started.
    let seededCount: Int

    /// Opens `path` for appending, seeding the dedup set from its lines so a restart does not write
    /// a redelivered postback twice.
    init(path: String, logger: Logger) throws {
        let url = URL(fileURLWithPath: path)
        try FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let existing = (try? Data(contentsOf: url)) ?? Data()
        var seen: Set<String> = []
        var unreadable = 0
        for line in existing.split(separator: UInt8(ascii: "\n")) where !line.allSatisfy({ $0 == 0x20 }) {
            if let header = try? JSONCoding.decoder.decode(ReceivedPostbackHeader.self, from: Data(line)) {
                seen.insert(Self.key(header.path ?? "/postbacks", header.payload.postbackIdentifier))
            } else {
                unreadable += 1
            }
        }
        if unreadable > 0 {
            logger.warning("Unreadable lines in output file", metadata: ["receiver.output": "\(path)", "lines": "\(unreadable)"])
        }
        // O_APPEND: every write lands at the end even if a test truncates the file meanwhile.
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0o644)
        guard fd >= 0 else {
            throw OpenError(description: "cannot open --output \(path): \(String(cString: strerror(errno)))")
        }
        handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        // A line cut short by a crash would swallow the next one: start on a fresh line.
        if let last = existing.last, last != UInt8(ascii: "\n") {
            try handle.write(contentsOf: Data("\n".utf8))
        }
        self.seen = seen
        self.seededCount = seen.count
    }

    /// Writes the first copy of a postback and returns true; a duplicate is only counted.
    func record(_ postback: VerifiedPostback, path: String, body: Data, receivedAt: Milliseconds) throws -> Bool {
        let key = Self.key(path, postback.payload.postbackIdentifier)
        guard seen.insert(key).inserted else {
            stats.duplicates += 1
            return false
        }
        do {
            let line = ReceivedPostback(
                receivedAt: receivedAt, path: path, kind: postback.kind.rawValue, kid: postback.keyID, duplicate: false,
                // SKAdNetwork bodies are signed field by field: the line shows their common payload.
                payload: try JSONCoding.decoder.decode(
                    JSONValue.self,
                    from: postback.kind == .adAttributionKit ? postback.payloadData : JSONCoding.encoder.encode(postback.payload)),
                body: try JSONCoding.decoder.decode(JSONValue.self, from: body))
            // FileHandle writes go straight to write(2): the line is visible to a tail at once.
            try handle.write(contentsOf: JSONCoding.encoder.encode(line) + Data("\n".utf8))
        } catch {
            // Not written, so not seen: the sender's retry gets another chance.
            seen.remove(key)
            throw error
        }
        stats.accepted += 1
        return true
    }

    /// Deduplication is per path: the ad network's copy and the advertiser's copy are both kept.
    static func key(_ path: String, _ postbackIdentifier: String) -> String { "\(path) \(postbackIdentifier)" }

    func countRejected() { stats.rejected += 1 }

    func currentStats() -> Stats { stats }
}
