import AttributionModel
import Foundation
import HTTPAPI
import Hummingbird
import PipelineCatalog
import RedisStreams
import ServiceRuntime

/// Dead letters of the dispatcher (`deliveries:dead`, one stream per partition): postbacks whose
/// destination never answered 2xx within 9 retries in 9 days, or may not be sent to at all. An operator
/// lists them and, once the destination is fixed, replays one or all: a replay is a fresh series of
/// attempts, signed again with the current key (same postback-identifier, so receivers deduplicate).
/// A dead letter's id is `<partition>-<stream entry id>`: entry ids are unique only within a stream.
struct DeadLetterRoutes {
    let redis: RedisConnection
    let partitioning: Partitioning
    let clock: @Sendable () -> Milliseconds

    func add(to admin: some RouterMethods<BasicRequestContext>, prefix: String, catalog: RouteCatalog) {
        catalog.on(admin, prefix: prefix, .get, "/dead-letters") { request, _ in
            let count = try RequestParameters.deadLetterCount(request.uri.queryParameters["count"].map(String.init))
            // A page ends where the one before it ended: `before` is the last id it listed (`next`).
            let before = try request.uri.queryParameters["before"].map { text in
                guard let cursor = Self.parse(String(text), partitioning) else {
                    throw ProblemDetails.badRequest(
                        .invalidDeadLetterIdentifier, "before is a dead letter id as listed, like 7-1700000000000-0")
                }
                return cursor
            }
            let partitions = partitioning.partitions
            // The newest `count` of each partition older than the cursor, then the newest `count` of
            // those, in one order over every partition: entry id (its time in ms first), then partition.
            let replies = try await redis.pipeline(
                partitions.map {
                    RedisCommand(
                        "XREVRANGE", StreamNames.deliveriesDead($0), Self.end(of: $0, before: before), "-", "COUNT", String(count)
                    )
                } + partitions.map { RedisCommand("XLEN", StreamNames.deliveriesDead($0)) })
            let newest = zip(partitions, replies).flatMap { partition, reply in
                reply.elements.compactMap(StreamPages.Entry.init).map { (partition, $0) }
            }.sorted { Self.order($0.0, $0.1.id) > Self.order($1.0, $1.1.id) }
            let total = replies.suffix(partitions.count).reduce(0) { $0 + ($1.int ?? 0) }
            let page = newest.prefix(count)
            var answer: [String: Any] = ["dead-letters": page.map { Self.item($1, in: $0) }, "total": total]
            // More may follow only when the page is full.
            if page.count == count, let last = page.last { answer["next"] = "\(last.0.index)-\(last.1.id)" }
            return try JSONAnswer.object(answer)
        }
        catalog.on(admin, prefix: prefix, .post, "/dead-letters/:id/replay") { _, context in
            let id = try context.parameters.require("id")
            guard let (partition, entryID) = Self.parse(id, partitioning) else {
                throw ProblemDetails.badRequest(
                    .invalidDeadLetterIdentifier,
                    "dead letter ids are <partition>-<stream entry id> as listed, like 7-1700000000000-0")
            }
            let found = try await redis.send(
                RedisCommand("XRANGE", StreamNames.deliveriesDead(partition), entryID, entryID)
            ).elements
            guard let entry = found.first.flatMap(StreamPages.Entry.init) else {
                throw ProblemDetails(.notFound, reason: .unknownDeadLetter, detail: "no dead letter \(id)")
            }
            guard try await replay([entry], in: partition) == 1 else {
                throw ProblemDetails(
                    .conflict, reason: .notReplayable, detail: "dead letter \(id) holds no delivery record to replay")
            }
            return try JSONAnswer.object(["replayed": 1])
        }
        catalog.on(admin, prefix: prefix, .post, "/dead-letters/replay") { _, _ in
            var replayed = 0
            // In pages, oldest first per partition, so a large backlog is not one giant transaction.
            for partition in partitioning.partitions {
                try await StreamPages.forEach(StreamNames.deliveriesDead(partition), size: 500, on: redis) { page in
                    replayed += try await replay(page, in: partition)
                }
            }
            return try JSONAnswer.object(["replayed": replayed])
        }
    }

    /// Where a partition's page starts (XREVRANGE's end): past the cursor in the order of `order`, so
    /// the cursor's own entry is left out and an entry of the same id in a lower partition is not.
    static func end(of partition: Partition, before cursor: (Partition, String)?) -> String {
        guard let (cursorPartition, id) = cursor else { return "+" }
        return partition.index < cursorPartition.index ? id : "(" + id
    }

    /// The listing's order: entry id, then partition.
    static func order(_ partition: Partition, _ id: String) -> (UInt64, UInt64, Int) {
        let entry = StreamTrim.EntryID(id)
        return (entry?.milliseconds ?? 0, entry?.sequence ?? 0, partition.index)
    }

    /// `<partition>-<ms>-<seq>` as the partition and the stream entry id.
    static func parse(_ id: String, _ partitioning: Partitioning) -> (Partition, String)? {
        guard let dash = id.firstIndex(of: "-"), let index = Int(id[..<dash]), (0..<partitioning.count).contains(index),
            StreamTrim.EntryID(String(id[id.index(after: dash)...])) != nil
        else { return nil }
        return (partitioning[index], String(id[id.index(after: dash)...]))
    }

    /// Moves each replayable entry back to its partition's `postbacks` as a fresh delivery and deletes
    /// it from the dead letters, in one transaction; returns how many were replayable.
    func replay(_ entries: [StreamPages.Entry], in partition: Partition) async throws -> Int {
        var commands: [RedisCommand] = []
        for entry in entries {
            guard let retry = Self.retry(in: entry)?.replay() else { continue }
            let envelope = Envelope(time: clock(), body: .deliveryRetry(retry))
            commands += [
                StreamCommands.add(StreamNames.postbacks(partition), message: try envelope.encoded()),
                RedisCommand("XDEL", StreamNames.deliveriesDead(partition), entry.id),
            ]
        }
        guard !commands.isEmpty else { return 0 }
        _ = try await redis.pipeline([RedisCommand("MULTI")] + commands + [RedisCommand("EXEC")])
        return commands.count / 2
    }

    /// A stream entry's fields as text.
    static func fields(of entry: StreamPages.Entry) -> [String: String] { entry.fieldMap.compactMapValues(\.string) }

    static func retry(in entry: StreamPages.Entry) -> DeliveryRetry? {
        fields(of: entry)["retry"].flatMap { try? JSONCoding.decoder.decode(DeliveryRetry.self, from: Data($0.utf8)) }
    }

    /// What an operator needs to see; the signed body and order stay inside.
    static func item(_ entry: StreamPages.Entry, in partition: Partition) -> [String: Any] {
        let fields = fields(of: entry)
        var item: [String: Any] = [
            "id": "\(partition.index)-\(entry.id)", "postback-identifier": fields["postback-identifier"] ?? "",
            "destination": fields["destination"] ?? PostbackDestination.adNetwork.rawValue, "error": fields["error"] ?? "",
        ]
        if let retry = retry(in: entry) {
            item["url"] = retry.url
            item["attempts"] = retry.attempts
            item["first-attempt-at"] = retry.firstAttemptAt
            item["replayable"] = true
        } else {
            item["replayable"] = false
        }
        return item
    }
}
