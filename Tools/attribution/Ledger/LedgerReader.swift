import AttributionModel
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceRuntime

/// Reads what the ledger needs from Redis: whole streams (in pages), the device states of updates
/// still waiting for their conversion, and what is in flight.
public struct LedgerReader {
    let connection: RedisConnection
    let partitioning: Partitioning

    public init(connection: RedisConnection, partitioning: Partitioning) {
        self.connection = connection
        self.partitioning = partitioning
    }

    static let page = 1_000

    public func read(acknowledged: [Ledger.Acknowledged]) async throws -> Ledger.Records {
        var records = Ledger.Records()
        // Updates and activity by event id: where their device state is, should they still wait.
        var reports: [String: (device: String, app: ItemIdentifier)] = [:]
        try await each(StreamNames.events) { envelope, _ in
            records.reported.insert(envelope.id)
            switch envelope.body {
            case .updateReported(let u): reports[envelope.id] = (u.deviceIdentifier, u.advertisedItemIdentifier)
            case .activityReported(let a): reports[envelope.id] = (a.deviceIdentifier, a.advertisedItemIdentifier)
            default: break
            }
        }
        try await each(StreamNames.verified) { envelope, _ in
            if case .impressionVerified(let impression) = envelope.body {
                records.verified[envelope.id] = impression.payload.impressionIdentifier
            } else {
                records.verified[envelope.id] = ""
            }
        }
        try await each(StreamNames.rejected) { envelope, _ in
            if case .rejected(let rejection) = envelope.body {
                records.refused[rejection.eventIdentifier] = rejection.reason.rawValue
            }
        }
        try await each(StreamNames.attributions) { envelope, _ in
            switch envelope.body {
            case .conversionAttributed(let attribution): records.attributions[attribution.conversionIdentifier] = attribution
            case .updateAttributed(let u): records.routed[u.eventIdentifier ?? envelope.id] = (u.conversionIdentifier, u.time)
            case .activityAttributed(let a): records.routed[a.eventIdentifier ?? envelope.id] = (a.conversionIdentifier, a.time)
            default: break
            }
        }
        for stream in PipelineSnapshot.deadLetterStreams where stream != StreamNames.deliveriesDead {
            try await each(stream) { envelope, fields in
                let cause = "\(stream.base): \(fields["error"]?.string ?? "no error recorded")"
                records.deadLettered[Self.eventIdentifier(of: envelope)] = cause
            }
        }
        try await each(StreamNames.postbacks) { envelope, _ in
            if case .postbackDue(let order) = envelope.body { records.due[order.payload.postbackIdentifier] = order }
        }
        try await entries(StreamNames.deliveriesDead) { fields in
            if let id = fields["postback-identifier"]?.string { records.deadDeliveries[id] = fields["error"]?.string ?? "" }
        }
        let unrouted = acknowledged.filter { reports[$0.eventIdentifier] != nil && records.routed[$0.eventIdentifier] == nil }
        records.waiting = try await waiting(unrouted.compactMap { reports[$0.eventIdentifier] })
        let snapshot = try await PipelineSnapshot.read(on: connection, partitioning, at: WallClock.nowMilliseconds())
        for group in snapshot.groups {
            records.inFlight["\(group.stream) (\(group.group)) pending"] = group.pending
            records.inFlight["\(group.stream) (\(group.group)) unread"] = group.lag ?? 0
        }
        for queue in snapshot.queues { records.inFlight[queue.label] = queue.count }
        return records
    }

    /// The event a message on any stream stands for: routed updates name theirs in the body.
    static func eventIdentifier(of envelope: Envelope) -> String {
        switch envelope.body {
        case .updateAttributed(let u): u.eventIdentifier ?? envelope.id
        case .activityAttributed(let a): a.eventIdentifier ?? envelope.id
        default: envelope.id
        }
    }

    /// Event ids of updates and activity kept in these devices' states.
    private func waiting(_ places: [(device: String, app: ItemIdentifier)]) async throws -> Set<String> {
        let keys = Set(
            places.map {
                DeviceKeys.winnerState(WinnerStep.Scope(device: $0.device, app: $0.app), in: partitioning.of(device: $0.device))
            })
        guard !keys.isEmpty else { return [] }
        var waiting = Set<String>()
        for reply in try await connection.pipeline(keys.map { RedisCommand("GET", $0) }) {
            guard let state = reply.decoded(as: DeviceAttributionState.self) else { continue }
            waiting.formUnion(state.pendingUpdates.compactMap(\.eventIdentifier))
            waiting.formUnion(state.pendingActivities.compactMap(\.eventIdentifier))
        }
        return waiting
    }

    /// Every envelope on every partition of `stream` (entries that do not decode are skipped), with the entry's fields.
    private func each(_ stream: PartitionedName, _ body: (Envelope, [String: RedisReply]) throws -> Void) async throws {
        try await entries(stream) { fields in
            guard let bytes = fields["e"]?.bytes, let envelope = try? Envelope.decode(bytes) else { return }
            try body(envelope, fields)
        }
    }

    /// Every entry of every partition of `stream`, each partition oldest first, `page` at a time.
    private func entries(_ stream: PartitionedName, _ body: ([String: RedisReply]) throws -> Void) async throws {
        for name in stream.all(partitioning) {
            try await StreamPages.forEach(name, size: Self.page, on: connection) { page in
                for entry in page { try body(entry.fieldMap) }
            }
        }
    }
}
