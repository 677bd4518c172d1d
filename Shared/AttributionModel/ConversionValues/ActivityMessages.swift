/// An activity report as ingest accepted it (`POST /v1/activity`): what the advertised app's SDK saw
/// on a device since its last report. attribution-winner routes it to a conversion like an update.
public struct ActivityReport: Sendable, Codable, Hashable {
    public var deviceIdentifier: String
    public var advertisedItemIdentifier: ItemIdentifier
    public var activity: Activity
    public var time: Milliseconds
    public var receivedAt: Milliseconds
    /// Routes the activity to one re-engagement conversion, as an update's tag does.
    public var conversionTag: String?
    /// The `events` id that reported it: attribution-winner sets it when routing, so that the routed
    /// message names its event even after waiting for its conversion (the fault run's ledger traces it).
    public var eventIdentifier: String?

    public init(
        deviceIdentifier: String, advertisedItemIdentifier: ItemIdentifier, activity: Activity, time: Milliseconds,
        receivedAt: Milliseconds, conversionTag: String? = nil
    ) {
        self.deviceIdentifier = deviceIdentifier
        self.advertisedItemIdentifier = advertisedItemIdentifier
        self.activity = activity
        self.time = time
        self.receivedAt = receivedAt
        self.conversionTag = conversionTag
    }

    enum CodingKeys: String, CodingKey {
        case deviceIdentifier = "device-identifier"
        case advertisedItemIdentifier = "advertised-item-identifier"
        case activity, time
        case receivedAt = "received-at"
        case conversionTag = "conversion-tag"
        case eventIdentifier = "event-identifier"
    }
}

/// Activity resolved to a conversion (no device identifier any more): the scheduler adds it to the
/// conversion's window totals and evaluates the pinned schema.
public struct AttributedActivity: Sendable, Codable, Hashable {
    public var conversionIdentifier: String
    public var activity: Activity
    public var time: Milliseconds
    /// The reported event's id, traced by operators and the fault run's ledger (no device in it).
    public var eventIdentifier: String?

    public init(conversionIdentifier: String, activity: Activity, time: Milliseconds, eventIdentifier: String? = nil) {
        self.conversionIdentifier = conversionIdentifier
        self.activity = activity
        self.time = time
        self.eventIdentifier = eventIdentifier
    }

    enum CodingKeys: String, CodingKey {
        case conversionIdentifier = "conversion-identifier"
        case activity, time
        case eventIdentifier = "event-identifier"
    }
}
