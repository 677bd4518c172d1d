import AttributionModel
import Foundation
import Hummingbird
import RedisStreams
import ServiceRuntime

/// Dead letters of the dispatcher (`deliveries:dead`): postbacks whose destination never answered 2xx
/// within 9 retries in 9 days, or may not be sent to at all. An operator lists them and, once the
/// destination is fixed, replays one or all: a replay is a fresh series of attempts, signed again with
/// the current key (same postback-identifier, so receivers deduplicate).
struct DeadLetterRoutes {
    let redis: RedisConnection
    let clock: @Sendable () -> Milliseconds

    func add(to admin: some RouterMethods<BasicRequestContext>, prefix: String, catalog: RouteCatalog) {
        catalog.on(admin, prefix: prefix, .get, "/dead-letters") { request, _ in
            let count = try RequestParameters.deadLetterCount(request.uri.queryParameters["count"].map(String.init))
            let entries = try await redis.send(
                RedisCommand("XREVRANGE", StreamNames.deliveriesDead, "+", "-", "COUNT", String(count))
            ).elements.compactMap(StreamPages.Entry.init).map(Self.item)
            let total = try await redis.send(RedisCommand("XLEN", StreamNames.deliveriesDead)).int ?? 0
            return try AdminRoutes.json(object: ["dead-letters": entries, "total": total] as [String: Any])
        }
        catalog.on(admin, prefix: prefix, .post, "/dead-letters/:id/replay") { _, context in
            let id = try context.parameters.require("id")
            guard StreamTrim.EntryID(id) != nil else {
                throw ProblemDetails.badRequest(
                    .invalidDeadLetterIdentifier, "dead letter ids are stream ids like 1700000000000-0")
            }
            let found = try await redis.send(RedisCommand("XRANGE", StreamNames.deliveriesDead, id, id)).elements
            guard let entry = found.first.flatMap(StreamPages.Entry.init) else {
                throw ProblemDetails(.notFound, reason: .unknownDeadLetter, detail: "no dead letter \(id)")
            }
            guard try await replay([entry]) == 1 else {
                throw ProblemDetails(
                    .conflict, reason: .notReplayable, detail: "dead letter \(id) holds no delivery record to replay")
            }
            return try AdminRoutes.json(object: ["replayed": 1])
        }
        catalog.on(admin, prefix: prefix, .post, "/dead-letters/replay") { _, _ in
            var replayed = 0
            // In pages, oldest first, so a large backlog is not one giant transaction.
            try await StreamPages.forEach(StreamNames.deliveriesDead, size: 500, on: redis) { page in
                replayed += try await replay(page)
            }
            return try AdminRoutes.json(object: ["replayed": replayed])
        }
    }

    /// Moves each replayable entry back to `postbacks` as a fresh delivery and deletes it from the dead
    /// letters, in one transaction; returns how many were replayable.
    func replay(_ entries: [StreamPages.Entry]) async throws -> Int {
        var commands: [RedisCommand] = []
        for entry in entries {
            guard let retry = Self.retry(in: entry)?.replay() else { continue }
            let envelope = Envelope(time: clock(), body: .deliveryRetry(retry))
            commands += [
                StreamCommands.add(StreamNames.postbacks, message: envelope.encoded()),
                RedisCommand("XDEL", StreamNames.deliveriesDead, entry.id),
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
    static func item(_ entry: StreamPages.Entry) -> [String: Any] {
        let fields = fields(of: entry)
        var item: [String: Any] = [
            "id": entry.id, "postback-identifier": fields["postback-identifier"] ?? "",
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
