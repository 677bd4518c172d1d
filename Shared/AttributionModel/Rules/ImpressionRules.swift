import Foundation

/// Rules an impression must satisfy beyond its signature. Returns the reason it is refused, or nil.
public enum ImpressionRules {
    /// A tap counts only within 15 minutes of the impression being loaded for display.
    public static let clickLimit: Duration = .minutes(15)
    /// A begin/end view counts only after 2 s on screen.
    public static let minimumView: Duration = .seconds(2)
    /// Clock-skew tolerance for impressions stamped in the future.
    public static let futureTolerance: Duration = .minutes(5)
    /// Older than the longest window that could still attribute it.
    public static let maximumAge: Duration = .days(30)

    /// The interaction limits (15 min, 2 s) and the skew tolerance describe the device and its clock,
    /// not the lifecycle, so the time scale leaves them alone; the maximum age is a window and scales.
    public static func check(
        _ payload: ImpressionPayload, interaction: Interaction, receivedAt: Milliseconds, policy: TimePolicy
    ) -> (RejectionReason, String)? {
        guard payload.impressionType == ImpressionPayload.appImpression else {
            return (.invalidPayload, "impression-type must be \(ImpressionPayload.appImpression)")
        }
        guard SourceIdentifier.range.contains(payload.sourceIdentifier) else {
            return (.invalidPayload, "source-identifier must be within 0–9999")
        }
        guard UUID(uuidString: payload.impressionIdentifier) != nil else {
            return (.invalidPayload, "impression-identifier must be a UUID")
        }
        guard payload.advertisedItemIdentifier > 0 else {
            return (.invalidPayload, "advertised-item-identifier must be a positive item id")
        }
        // Signed by the network, reported by the device (unsigned): either could be absurd, and the
        // differences below must not overflow; a loaded-at of -2⁶³ once took the verifier down.
        let times =
            [("timestamp", payload.timestamp), ("time", interaction.time)]
            + [("loaded-at", interaction.loadedAt), ("begin", interaction.begin)].compactMap { name, time in
                time.map { (name, $0) }
            }
        for (name, time) in times {
            if let problem = PlausibleTime.problem(time, field: name) { return (.invalidPayload, problem) }
        }
        if payload.timestamp > receivedAt + TimePolicy.realTime.milliseconds(futureTolerance) {
            return (.impressionFromFuture, "timestamp is more than 5 minutes in the future")
        }
        if receivedAt - payload.timestamp > policy.milliseconds(maximumAge) {
            return (.impressionExpired, "impression is older than the longest attribution window")
        }
        switch interaction.type {
        case .click:
            let loadedAt = interaction.loadedAt ?? payload.timestamp
            let gap = interaction.time - loadedAt
            if gap < 0 || gap > TimePolicy.realTime.milliseconds(clickLimit) {
                return (.clickTooLate, "a click counts only within 15 minutes of the impression being loaded")
            }
        case .view:
            // A one-call view (no begin) has no documented minimum: Apple's handleView() records it as is.
            if let begin = interaction.begin, interaction.time - begin < TimePolicy.realTime.milliseconds(minimumView) {
                return (.viewTooShort, "a view counts only after 2 s on screen")
            }
        }
        return nil
    }
}

/// A view's time on screen: one ad network may not have two open views for the same advertised app on
/// one device at once, so a view that overlaps an earlier one of that network is refused.
public struct ViewInterval: Sendable, Hashable {
    public var begin: Milliseconds
    public var end: Milliseconds

    public init(begin: Milliseconds, end: Milliseconds) {
        self.begin = begin
        self.end = end
    }

    /// Touching ends (one view ends as the next begins) are not an overlap.
    public func overlaps(_ other: ViewInterval) -> Bool { begin < other.end && other.begin < end }

    /// Stored as "begin:end" in the verifier's per-device sorted set (scored by end).
    public var member: String { "\(begin):\(end)" }

    public init?(member: String) {
        let parts = member.split(separator: ":")
        guard parts.count >= 2, let begin = Milliseconds(parts[0]), let end = Milliseconds(parts[1]) else { return nil }
        self.init(begin: begin, end: end)
    }
}
