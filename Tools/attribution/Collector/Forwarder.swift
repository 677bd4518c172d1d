import AttributionModel
import Foundation
import Logging
import NIOCore
import ServiceRuntime
import ToolSupport

/// Forwards each decoded postback to the partner URLs with the dispatcher's retry discipline: any
/// non-2xx, timeout or connection error is a failure, at most 9 retries within 9 days (`RetrySchedule`,
/// scaled by `--time-scale`), then the item goes to `forward-dead.jsonl`. Pending items are kept in
/// `forward-pending.json`, so a restart resumes them.
actor Forwarder {
    struct Item: Codable, Sendable {
        var url: String
        var body: Data
        var postbackIdentifier: String
        var attempts: Int
        var firstAttemptAt: Milliseconds?
        var dueAt: Milliseconds
        var lastError: String?
    }

    let urls: [String]
    let client: ToolHTTPClient
    let policy: TimePolicy
    let directory: URL
    let logger: Logger
    private var pending: [Item] = []
    private(set) var delivered = 0
    private(set) var deadLettered = 0

    init(urls: [String], client: ToolHTTPClient, policy: TimePolicy, directory: URL, logger: Logger) {
        self.urls = urls
        self.client = client
        self.policy = policy
        self.directory = directory
        self.logger = logger
        let saved = try? Data(contentsOf: directory.appendingPathComponent("forward-pending.json"))
        self.pending = saved.flatMap { try? JSONDecoder().decode([Item].self, from: $0) } ?? []
    }

    func enqueue(body: Data, postbackIdentifier: String) {
        let now = WallClock.nowMilliseconds()
        pending += urls.map { Item(url: $0, body: body, postbackIdentifier: postbackIdentifier, attempts: 0, dueAt: now) }
        save()
    }

    /// Until cancelled: send what is due (concurrently), then sleep a little.
    func run() async {
        while !Task.isCancelled {
            let now = WallClock.nowMilliseconds()
            let due = pending.enumerated().filter { $0.element.dueAt <= now }.map(\.offset)
            if !due.isEmpty {
                let items = due.map { pending[$0] }
                let results = await withTaskGroup(of: (Int, String?).self) { group in
                    for (index, item) in items.enumerated() { group.addTask { (index, await self.post(item)) } }
                    var results = [String?](repeating: nil, count: items.count)
                    for await (index, error) in group { results[index] = error }
                    return results
                }
                var generator = SystemRandomNumberGenerator()
                var keep = pending.indices.filter { !due.contains($0) }.map { pending[$0] }
                let failedAt = WallClock.nowMilliseconds()
                for (var item, error) in zip(items, results) {
                    item.attempts += 1
                    item.firstAttemptAt = item.firstAttemptAt ?? now
                    guard let error else {
                        delivered += 1
                        continue
                    }
                    item.lastError = error
                    if let delay = RetrySchedule.delay(afterFailedAttempts: item.attempts, policy: policy, using: &generator) {
                        item.dueAt = failedAt + delay
                        keep.append(item)
                    } else {
                        deadLetter(item)
                    }
                }
                pending = keep
                save()
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    var pendingCount: Int { pending.count }

    nonisolated func post(_ item: Item) async -> String? {
        do {
            let response = try await client.send(
                .POST, item.url, headers: [("Content-Type", "application/json")], body: ByteBuffer(data: item.body),
                timeout: .seconds(10), maximumAnswerBytes: 1 << 20)
            return (200..<300).contains(response.status) ? nil : "HTTP \(response.status)"
        } catch {
            return "\(error)"
        }
    }

    private func deadLetter(_ item: Item) {
        deadLettered += 1
        logger.warning("Forward gave up", metadata: ["forward.url": "\(item.url)", "error": "\(item.lastError ?? "")"])
        guard var line = try? JSONEncoder().encode(item) else { return }
        line.append(UInt8(ascii: "\n"))
        let url = directory.appendingPathComponent("forward-dead.jsonl")
        if let handle = try? FileHandle(forWritingTo: url) {
            handle.seekToEndOfFile()
            handle.write(line)
            try? handle.close()
        } else {
            try? line.write(to: url)
        }
    }

    private func save() {
        let url = directory.appendingPathComponent("forward-pending.json")
        try? JSONEncoder().encode(pending).write(to: url, options: .atomic)
    }
}
