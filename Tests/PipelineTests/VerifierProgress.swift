import AttributionModel
import PipelineCatalog
import RedisStreams
import ServiceRuntime

/// The events the verifier has passed on (`verified`) or refused (`rejected`), read as they appear: a
/// scenario waits for its own events only. Waiting for counts instead (every event accepted so far)
/// made each scenario wait for all the others that started with it, and under load an impression
/// posted just after its conversion's update then reached attribution-winner after the conversion's
/// settle time.
actor VerifierProgress {
    private let connection: RedisConnection
    /// Event identifiers seen on either stream.
    private var seen: Set<String> = []
    /// Per partition stream, the id of the last entry read.
    private var readUpTo: [String: String] = [:]
    /// The read under way, which concurrent callers share.
    private var reading: Task<Void, any Error>?
    private static let page = 1_000

    init(connection: RedisConnection) {
        self.connection = connection
    }

    /// Whether every one of `events` (ingest's event identifiers) has been verified or refused.
    func holds(_ events: [String]) async throws -> Bool {
        if events.allSatisfy(seen.contains) { return true }
        if let reading {
            try await reading.value
        } else {
            let task = Task { try await self.readNewEntries() }
            reading = task
            defer { reading = nil }
            try await task.value
        }
        return events.allSatisfy(seen.contains)
    }

    private func readNewEntries() async throws {
        var streams = StreamNames.verified.all(testPartitioning) + StreamNames.rejected.all(testPartitioning)
        while !streams.isEmpty {
            let replies = try await connection.pipeline(
                streams.map { RedisCommand("XRANGE", $0, readUpTo[$0].map { "(" + $0 } ?? "-", "+", "COUNT", String(Self.page)) })
            var full: [String] = []
            for (stream, reply) in zip(streams, replies) {
                let entries = reply.elements.compactMap(StreamPages.Entry.init)
                for entry in entries {
                    guard let bytes = entry.fieldMap["e"]?.bytes, let envelope = try? Envelope.decode(bytes) else { continue }
                    if case .rejected(let rejection) = envelope.body {
                        seen.insert(rejection.eventIdentifier)
                    } else {
                        seen.insert(envelope.id)
                    }
                }
                if let last = entries.last { readUpTo[stream] = last.id }
                if entries.count >= Self.page { full.append(stream) }
            }
            streams = full
        }
    }
}
