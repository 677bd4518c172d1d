import AttributionCrypto
import AttributionModel
import Foundation
import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The receiver's output file and its memory: deduplicates on `postback-identifier` (delivery is at
/// least once) and counts what it saw. Under one lock, so two copies racing in are checked and written
/// one after the other; a lock rather than an actor so the postback fast path (`PostbackFastPath`)
/// records on its event loop without a hop (a write(2) of one line is all it holds the lock for).
final class PostbackLog: Sendable {
    struct Stats: Codable, Sendable {
        var accepted = 0
        var duplicates = 0
        var rejected = 0
    }

    struct OpenError: Error, CustomStringConvertible {
        var description: String
    }

    private struct State {
        var seen: Set<String>
        var stats = Stats()
    }

    private let handle: FileHandle
    private let state: Mutex<State>

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
        self.state = Mutex(State(seen: seen))
        self.seededCount = seen.count
    }

    /// Writes the first copy of a postback and returns true; a duplicate is only counted.
    func record(_ postback: VerifiedPostback, path: String, body: Data, receivedAt: Milliseconds) throws -> Bool {
        let key = Self.key(path, postback.payload.postbackIdentifier)
        // The line is made before the lock; only the check, the write and the count hold it.
        let payload =
            postback.kind == .adAttributionKit ? postback.payloadData : try JSONCoding.encoder.encode(postback.payload)
        let line = try Self.line(
            receivedAt: receivedAt, path: path, kind: postback.kind.rawValue, kid: postback.keyID, payload: payload,
            body: body)
        return try state.withLock { state in
            guard state.seen.insert(key).inserted else {
                state.stats.duplicates += 1
                return false
            }
            do {
                // FileHandle writes go straight to write(2): the line is visible to a tail at once.
                try handle.write(contentsOf: line)
            } catch {
                // Not written, so not seen: the sender's retry gets another chance.
                state.seen.remove(key)
                throw error
            }
            state.stats.accepted += 1
            return true
        }
    }

    /// One output line, newline included. The body and the signed payload were parsed as JSON to be
    /// verified, so each is spliced in as received when it is one line of one object: re-encoding them
    /// was a fifth of the receiver's CPU. Anything else goes through `ReceivedPostback`.
    static func line(
        receivedAt: Milliseconds, path: String, kind: String, kid: String, payload: Data, body: Data
    ) throws -> Data {
        guard let path = plainString(path), let kind = plainString(kind), let kid = plainString(kid),
            isOneLineObject(payload), isOneLineObject(body)
        else {
            let line = ReceivedPostback(
                receivedAt: receivedAt, path: path, kind: kind, kid: kid, duplicate: false,
                payload: try JSONCoding.decoder.decode(JSONValue.self, from: payload),
                body: try JSONCoding.decoder.decode(JSONValue.self, from: body))
            return try JSONCoding.encoder.encode(line) + Data("\n".utf8)
        }
        // The keys in JSONCoding.encoder's (sorted) order, as the other path writes them.
        var line = Data("{\"body\":".utf8)
        line.reserveCapacity(body.count + payload.count + 160)
        line.append(body)
        line.append(
            contentsOf: ",\"duplicate\":false,\"kid\":\"\(kid)\",\"kind\":\"\(kind)\",\"path\":\"\(path)\",\"payload\":".utf8)
        line.append(payload)
        line.append(contentsOf: ",\"received-at\":\(receivedAt)}\n".utf8)
        return line
    }

    /// `text` if it can stand between quotes as it is: printable ASCII, no quote, no backslash.
    static func plainString(_ text: String) -> String? {
        text.utf8.allSatisfy { (0x20..<0x7F).contains($0) && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") } ? text : nil
    }

    /// Valid JSON (the caller parsed it) whose text is an object on one line.
    private static func isOneLineObject(_ json: Data) -> Bool {
        // Over the contiguous bytes: Data's element-by-element iterator was 3 % of the receiver's CPU.
        json.first == UInt8(ascii: "{") && json.last == UInt8(ascii: "}")
            && json.withUnsafeBytes { bytes in !bytes.contains(where: { $0 == 0x0A || $0 == 0x0D }) }
    }

    /// Deduplication is per path: the ad network's copy and the advertiser's copy are both kept.
    static func key(_ path: String, _ postbackIdentifier: String) -> String { "\(path) \(postbackIdentifier)" }

    func countRejected() { state.withLock { $0.stats.rejected += 1 } }

    func currentStats() -> Stats { state.withLock { $0.stats } }
}
