/// A postback held back until `dueAt`, when the scheduler releases it to the dispatcher.
public struct HeldPostback: Sendable, Hashable {
    public var order: PostbackOrder
    public var dueAt: Milliseconds
}

/// One conversion's postback lifecycle as a pure state machine: updates and window ends go in,
/// postbacks to hold come out. The scheduler stores it as JSON and feeds it its messages.
public struct PostbackPlan: Sendable, Hashable, Codable {
    public var attribution: Attribution
    public var crowd: CrowdAssessment
    /// Windows start only once the app sent an update.
    public var firstUpdateAt: Milliseconds?
    /// The latest values the app reported.
    public var values: PostbackFieldGating.Values
    /// A window is done once locked or ended; later updates in it are ignored.
    public var windowsDone: [Bool]

    public init(attribution: Attribution, crowd: CrowdAssessment) {
        self.attribution = attribution
        self.crowd = attribution.isDevelopment ? .development : crowd
        self.values = .init()
        self.windowsDone = Array(repeating: false, count: ConversionWindows.count)
    }

    public var isFinished: Bool { windowsDone.allSatisfy { $0 } }

    /// When each window ends: the scheduler sets a timer for each.
    public func windowEnds(policy: TimePolicy) -> [(window: Int, at: Milliseconds)] {
        (0..<ConversionWindows.count).map { index in
            let end = ConversionWindows.end(of: index, development: attribution.isDevelopment)
            return (index, attribution.conversionTime + policy.milliseconds(end))
        }
    }

    /// Applies a value update; a lock freezes the window and prepares its postbacks at once (still delayed).
    public mutating func apply(
        _ update: AttributedUpdate, policy: TimePolicy, using generator: inout some RandomNumberGenerator
    ) -> [HeldPostback] {
        guard update.update.applies(to: attribution.conversionType) else { return [] }
        let offset = update.time - attribution.conversionTime
        if firstUpdateAt == nil,
            offset > policy.milliseconds(ConversionWindows.firstUpdateDeadline(for: attribution.conversionType))
        {
            return []
        }
        guard
            let index = ConversionWindows.index(
                atOffset: offset, development: attribution.isDevelopment, policy: policy),
            !windowsDone[index]
        else { return [] }
        firstUpdateAt = firstUpdateAt ?? update.time
        values.fine = update.update.fineConversionValue
        if let coarse = update.update.coarseConversionValue { values.coarse = coarse }
        guard update.update.lockPostback else { return [] }
        windowsDone[index] = true
        return postbacks(for: index, preparedAt: max(update.time, attribution.conversionTime), policy: policy, using: &generator)
    }

    /// A newer conversion locked this one (re-engagement without the overlapping-conversions opt-in):
    /// the window open at `time` is locked and its postbacks prepared now (still delayed); later
    /// windows will not open.
    public mutating func supersede(at time: Milliseconds, policy: TimePolicy, using generator: inout some RandomNumberGenerator)
        -> [HeldPostback]
    {
        let offset = time - attribution.conversionTime
        let current = ConversionWindows.index(atOffset: offset, development: attribution.isDevelopment, policy: policy)
        var held: [HeldPostback] = []
        for index in windowsDone.indices where !windowsDone[index] {
            guard let current, index >= current else { continue }  // earlier windows close on their own timers
            windowsDone[index] = true
            if index == current, firstUpdateAt != nil {
                held += postbacks(
                    for: index, preparedAt: max(time, attribution.conversionTime), policy: policy, using: &generator)
            }
        }
        return held
    }

    /// A window reached its end: its postbacks are prepared unless a lock already did, or no update came.
    public mutating func closeWindow(
        _ index: Int, policy: TimePolicy, using generator: inout some RandomNumberGenerator
    ) -> [HeldPostback] {
        guard windowsDone.indices.contains(index), !windowsDone[index] else { return [] }
        windowsDone[index] = true
        guard firstUpdateAt != nil else { return [] }
        let end = windowEnds(policy: policy)[index].at
        return postbacks(for: index, preparedAt: end, policy: policy, using: &generator)
    }

    /// The winning postback for a window and, for the first window, one per non-winning network.
    func postbacks(
        for index: Int, preparedAt time: Milliseconds, policy: TimePolicy,
        using generator: inout some RandomNumberGenerator
    ) -> [HeldPostback] {
        let contenders = [(attribution.winner, true)] + (index == 0 ? attribution.nonWinners.map { ($0, false) } : [])
        return contenders.compactMap { impression, didWin in
            guard
                let fields = PostbackFieldGating.fields(
                    sequenceIndex: index, didWin: didWin, values: values, crowd: crowd)
            else { return nil }
            let payload = PostbackPayload(
                adNetworkIdentifier: impression.adNetworkIdentifier,
                sourceIdentifier: SourceIdentifierTruncation.truncate(
                    impression.sourceIdentifier, digits: fields.sourceIdentifierDigits),
                advertisedItemIdentifier: attribution.advertisedItemIdentifier,
                publisherItemIdentifier: fields.includesPublisherItemIdentifier
                    ? impression.publisherItemIdentifier : nil,
                conversionType: attribution.conversionType,
                marketplaceIdentifier: fields.includesMarketplace ? PostbackPayload.appStoreMarketplace : nil,
                postbackIdentifier: RandomUUID.make(using: &generator),
                postbackSequenceIndex: index, didWin: didWin)
            let order = PostbackOrder(
                payload: payload, adInteractionType: impression.interactionType,
                conversionValue: fields.conversionValue, coarseConversionValue: fields.coarseConversionValue,
                countryCode: fields.includesCountryCode ? attribution.countryCode : nil,
                isDevelopment: attribution.isDevelopment)
            let delay = PostbackDelay.draw(
                sequenceIndex: index, development: attribution.isDevelopment, policy: policy, using: &generator)
            return HeldPostback(order: order, dueAt: time + delay)
        }
    }
}

/// Version-4 UUIDs from a caller's generator, so tests can replay a plan exactly.
public enum RandomUUID {
    public static func make(using generator: inout some RandomNumberGenerator) -> String {
        var bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        let hex = bytes.map { byte in
            let digits = String(byte, radix: 16)
            return digits.count == 1 ? "0" + digits : digits
        }
        return [hex[0..<4], hex[4..<6], hex[6..<8], hex[8..<10], hex[10..<16]].map { $0.joined() }.joined(
            separator: "-")
    }
}
