/// A conversion attribution-winner made, remembered so that later value updates can be routed to it.
public struct ConversionRecord: Sendable, Codable, Hashable {
    public var conversionIdentifier: String
    public var conversionType: ConversionType
    public var time: Milliseconds
    public var conversionTag: String?
    /// A settling conversion's horizon on `verified` (a stream position: wall-clock ms of entry ids):
    /// where the verifier wrote it plus the settle time. It is attributed once attribution-winner has
    /// read `verified` that far in its partition (`WinnerStep`). Nil in records written before it.
    public var settlesAfter: Milliseconds?
    /// A settling conversion waited for an event the verifier held (`WinnerStep`): once the verifier has
    /// finished it, the horizon moves to `verified`'s end, where that event's verified form went. Nil:
    /// it has not waited for one.
    public var heldByVerifier: Bool?

    public init(
        conversionIdentifier: String, conversionType: ConversionType, time: Milliseconds, conversionTag: String? = nil,
        settlesAfter: Milliseconds? = nil, heldByVerifier: Bool? = nil
    ) {
        self.conversionIdentifier = conversionIdentifier
        self.conversionType = conversionType
        self.time = time
        self.conversionTag = conversionTag
        self.settlesAfter = settlesAfter
        self.heldByVerifier = heldByVerifier
    }
}

/// What attribution-winner keeps per device and advertised app: the impression pool, the conversions it
/// attributed, and updates that arrived before their conversion (kept, never lost).
public struct DeviceAttributionState: Sendable, Codable, Hashable {
    public var impressions: [VerifiedImpression] = []
    public var conversions: [ConversionRecord] = []
    public var pendingUpdates: [ValueUpdateReport] = []
    /// The first install seen (download or redownload, attributed or organic). Not a condition for
    /// re-engagement (a re-engagement proves the app is installed); kept for inspection.
    public var installedAt: Milliseconds?
    /// The country the latest install (download or redownload, attributed or organic) reported: a
    /// re-engagement that reports none takes it (Apple's WWDC25 material: re-engagements reuse the
    /// install's country). Nil until an install with a country is seen.
    public var installCountry: String?
    /// Conversions reported but not yet attributed (they wait out the settle time). An update that one
    /// of them would take waits with them instead of going to an older conversion.
    public var settling: [ConversionRecord] = []
    /// Activity reports that arrived before their conversion: kept and routed when it is attributed.
    public var pendingActivities: [ActivityReport] = []

    public init() {}

    enum CodingKeys: String, CodingKey {
        case impressions, conversions, pendingUpdates, installedAt, installCountry, settling, pendingActivities
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        impressions = try container.decode([VerifiedImpression].self, forKey: .impressions)
        conversions = try container.decode([ConversionRecord].self, forKey: .conversions)
        pendingUpdates = try container.decode([ValueUpdateReport].self, forKey: .pendingUpdates)
        installedAt = try container.decodeIfPresent(Milliseconds.self, forKey: .installedAt)
        installCountry = try container.decodeIfPresent(String.self, forKey: .installCountry)
        // Absent in states written before conversions settled.
        settling = try container.decodeIfPresent([ConversionRecord].self, forKey: .settling) ?? []
        pendingActivities = try container.decodeIfPresent([ActivityReport].self, forKey: .pendingActivities) ?? []
    }

    /// Whether the conversion with this identifier was attributed on this device (and is still kept).
    public func attributed(_ conversionIdentifier: String) -> Bool {
        conversions.contains { $0.conversionIdentifier == conversionIdentifier }
    }

    /// Notes a conversion that will be attributed once its settle time has passed (and, with
    /// `settlesAfter`, once `verified` has been read that far).
    public mutating func settle(_ report: ConversionReport, conversionIdentifier: String, settlesAfter: Milliseconds? = nil) {
        guard !settling.contains(where: { $0.conversionIdentifier == conversionIdentifier }) else { return }
        settling.append(
            ConversionRecord(
                conversionIdentifier: conversionIdentifier, conversionType: report.conversionType, time: report.time,
                conversionTag: report.conversionTag, settlesAfter: settlesAfter))
    }

    /// At most 15 view impressions per publisher app are kept (the oldest are dropped).
    public static let viewsKeptPerPublisher = 15

    /// Adds an impression to the pool. Returns true when it is late: a conversion after its interaction
    /// was already attributed without it (it reached attribution-winner after that conversion settled).
    @discardableResult
    public mutating func record(_ impression: VerifiedImpression) -> Bool {
        // A redelivered impression is the same impression: keep one copy.
        guard !impressions.contains(where: { $0.payload.impressionIdentifier == impression.payload.impressionIdentifier })
        else { return false }
        let late = conversions.contains { $0.time >= impression.interaction.time }
        impressions.append(impression)
        guard impression.interaction.type == .view else { return late }
        let publisher = impression.payload.publisherItemIdentifier
        let views = impressions.enumerated()
            .filter { $0.element.interaction.type == .view && $0.element.payload.publisherItemIdentifier == publisher }
            .sorted { $0.element.interaction.time < $1.element.interaction.time }
        if views.count > Self.viewsKeptPerPublisher {
            let dropped = Set(views.prefix(views.count - Self.viewsKeptPerPublisher).map(\.offset))
            impressions = impressions.enumerated().filter { !dropped.contains($0.offset) }.map(\.element)
        }
        return late
    }

    /// What attributing a conversion produced.
    public struct Outcome: Sendable, Hashable {
        public var attribution: Attribution
        /// Updates that were waiting for this conversion, resolved to it.
        public var updates: [AttributedUpdate]
        /// Earlier conversions whose open postbacks this one locks (no overlapping-conversions opt-in).
        public var superseded: [String]
    }

    /// Attributes a conversion, or says why not (an organic conversion, a cooldown, a cap).
    /// `deviceReengagements` are this device's re-engagement times across all apps.
    public mutating func attribute(
        _ conversion: VerifiedConversion, conversionIdentifier: String, deviceReengagements: [Milliseconds] = [],
        policy: TimePolicy
    ) -> Result<Outcome, ConversionEligibility.Refusal> {
        let report = conversion.report
        settling.removeAll { $0.conversionIdentifier == conversionIdentifier }
        if report.conversionType != .reengagement {
            installedAt = min(installedAt ?? report.time, report.time)
            if let country = report.countryCode { installCountry = country }
        }
        if let refusal = ConversionEligibility.precheck(report, state: self, app: conversion.app, policy: policy) {
            return .failure(refusal)
        }
        guard
            let result = WinnerSelection.select(
                from: impressions, conversionType: report.conversionType, time: report.time, app: conversion.app,
                policy: policy)
        else { return .failure(.noEligibleImpression) }
        if let refusal = ConversionEligibility.caps(
            report, winnerIsDevelopment: result.winner.payload.isDevelopment, state: self,
            deviceReengagements: deviceReengagements, policy: policy)
        {
            return .failure(refusal)
        }
        let superseded =
            Self.supersedes(app: conversion.app)
            ? conversions.filter { $0.time <= report.time }.map(\.conversionIdentifier) : []
        let record = ConversionRecord(
            conversionIdentifier: conversionIdentifier, conversionType: report.conversionType, time: report.time,
            conversionTag: report.conversionTag)
        conversions.append(record)
        let attribution = Attribution(
            conversionIdentifier: conversionIdentifier, advertisedItemIdentifier: report.advertisedItemIdentifier,
            conversionType: report.conversionType, conversionTime: report.time,
            countryCode: report.countryCode ?? (report.conversionType == .reengagement ? installCountry : nil),
            winner: AttributedImpression(result.winner), nonWinners: result.nonWinners.map(AttributedImpression.init),
            conversionTag: report.conversionTag, marketplaceIdentifier: report.marketplaceIdentifier)
        // The winning impression has done its work: it cannot win a second conversion.
        impressions.removeAll { $0.payload.impressionIdentifier == result.winner.payload.impressionIdentifier }
        return .success(Outcome(attribution: attribution, updates: routePending(), superseded: superseded))
    }

    /// Routes the pending updates that now have a conversion. `attribute` does it for an attributed
    /// conversion; after a refusal the caller does, for updates that waited on the refused one.
    public mutating func routePending() -> [AttributedUpdate] {
        var resolved: [AttributedUpdate] = []
        var stillPending: [ValueUpdateReport] = []
        for update in pendingUpdates {
            if let routed = route(update) { resolved.append(routed) } else { stillPending.append(update) }
        }
        pendingUpdates = stillPending
        return resolved
    }

    /// Routes activity like an update that applies to every conversion type: to the conversion its tag
    /// names, else the most recent one at its time. Activity with nowhere to go yet is kept.
    public mutating func receive(_ activity: ActivityReport) -> AttributedActivity? {
        if let routed = route(activity) { return routed }
        pendingActivities.append(activity)
        return nil
    }

    /// The pending activity that now has a conversion (call with `routePending`).
    public mutating func routePendingActivities() -> [AttributedActivity] {
        var resolved: [AttributedActivity] = []
        var stillPending: [ActivityReport] = []
        for activity in pendingActivities {
            if let routed = route(activity) { resolved.append(routed) } else { stillPending.append(activity) }
        }
        pendingActivities = stillPending
        return resolved
    }

    func route(_ activity: ActivityReport) -> AttributedActivity? {
        target(at: activity.time, tag: activity.conversionTag) { _ in true }.map {
            AttributedActivity(
                conversionIdentifier: $0.conversionIdentifier, activity: activity.activity, time: activity.time,
                eventIdentifier: activity.eventIdentifier)
        }
    }

    /// Whether a new conversion (of any type) locks the open postbacks of the conversions before it:
    /// yes, unless the app opted in to overlapping conversions (spec section 3, "a new conversion locks
    /// and schedules the active postbacks of the previous one").
    public static func supersedes(app: AdvertisedAppConfiguration) -> Bool {
        app.eligibleForOverlappingConversions != true
    }

    /// Routes an update: by conversion tag when it has one, else to the most recent conversion whose type
    /// it applies to. Updates with nowhere to go yet are kept until their conversion arrives.
    public mutating func receive(_ update: ValueUpdateReport) -> AttributedUpdate? {
        if let routed = route(update) { return routed }
        pendingUpdates.append(update)
        return nil
    }

    func route(_ update: ValueUpdateReport) -> AttributedUpdate? {
        target(at: update.time, tag: update.update.conversionTag, applies: update.update.applies(to:)).map {
            AttributedUpdate(
                conversionIdentifier: $0.conversionIdentifier, update: update.update, time: update.time,
                eventIdentifier: update.eventIdentifier)
        }
    }

    /// The conversion something reported at `time` belongs to: the one `tag` names, else the most recent
    /// one whose type `applies`. Nil while none exists, or while a conversion reported between the two
    /// is settling (it waits for that attribution).
    func target(at time: Milliseconds, tag: String?, applies: (ConversionType) -> Bool) -> ConversionRecord? {
        func takes(_ conversion: ConversionRecord) -> Bool {
            conversion.time <= time && applies(conversion.conversionType) && (tag == nil || conversion.conversionTag == tag)
        }
        guard let target = conversions.filter(takes).max(by: { $0.time < $1.time }) else { return nil }
        // A settling conversion between the target and the report waits for its attribution: it would take
        // the report, or (a re-engagement, a redownload without the overlap opt-in) supersede the target and
        // close the window the report would otherwise land in, whichever stream reaches the scheduler first.
        if settling.contains(where: { $0.time >= target.time && $0.time <= time }) { return nil }
        return target
    }
}
