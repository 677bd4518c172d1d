/// A postback held back until `dueAt`, when the scheduler releases it to the dispatcher.
public struct HeldPostback: Sendable, Hashable {
    public var order: PostbackOrder
    public var dueAt: Milliseconds
    /// Set when this postback re-prepares one already held, with the same id: an update that reached
    /// the scheduler after its window closed changed its values (or, a lock, its due time).
    public var replacing: Replaced?

    /// The held postback a re-prepared one takes the place of.
    public struct Replaced: Sendable, Hashable {
        public var order: PostbackOrder
        public var dueAt: Milliseconds
    }

    public init(order: PostbackOrder, dueAt: Milliseconds, replacing: Replaced? = nil) {
        self.order = order
        self.dueAt = dueAt
        self.replacing = replacing
    }
}

/// One conversion's postback lifecycle as a pure state machine: updates and window ends go in,
/// postbacks to hold come out. The scheduler stores it as JSON and feeds it its messages.
public struct PostbackPlan: Sendable, Hashable, Codable {
    public var attribution: Attribution
    public var crowd: CrowdAssessment
    /// Windows start only once the app sent an update: the time of the earliest update applied.
    public var firstUpdateAt: Milliseconds?
    /// Every value the app reported, each with its own time. A window's postback carries the latest
    /// values stamped before its end (or its lock), whatever order the updates were processed in, so an
    /// update for a later window that overtakes a window's timer cannot leak into that window.
    public var reported: [ReportedValue]
    /// A window is done once locked or ended (or superseded); updates stamped after that are ignored.
    public var windowsDone: [Bool]
    /// What each done window prepared, and as of when (nil: open, or never opened). An update stamped
    /// before that moment which reaches the scheduler later (a stage was down, a claim waited, Redis
    /// restarted) still counts: the window's postbacks are prepared, or re-prepared, with it.
    public var closed: [ClosedWindow?]
    /// The app's conversion-value schema in force when the conversion was attributed (pinned for the
    /// whole lifecycle), the activity totals per window, and the last value it gave in each window.
    public var valueSchema: ConversionValueSchema?
    public var activityTotals: [ActivityTotals]
    public var schemaValues: [SchemaValue?]

    /// One reported value with the update's time (`fine` and `coarse` are each optional: an update
    /// without a coarse value keeps the coarse value in force).
    public struct ReportedValue: Sendable, Hashable, Codable {
        public var time: Milliseconds
        public var fine: Int?
        public var coarse: CoarseConversionValue?
    }

    public init(attribution: Attribution, crowd: CrowdAssessment, valueSchema: ConversionValueSchema? = nil) {
        self.attribution = attribution
        self.crowd = attribution.isDevelopment ? .development : crowd
        self.reported = []
        self.windowsDone = Array(repeating: false, count: ConversionWindows.count)
        self.closed = Array(repeating: nil, count: ConversionWindows.count)
        self.valueSchema = valueSchema
        self.activityTotals = Array(repeating: ActivityTotals(), count: ConversionWindows.count)
        self.schemaValues = Array(repeating: nil, count: ConversionWindows.count)
    }

    enum CodingKeys: String, CodingKey {
        case attribution, crowd, firstUpdateAt, reported, values, windowsDone, closed, valueSchema, activityTotals,
            schemaValues
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        attribution = try container.decode(Attribution.self, forKey: .attribution)
        crowd = try container.decode(CrowdAssessment.self, forKey: .crowd)
        firstUpdateAt = try container.decodeIfPresent(Milliseconds.self, forKey: .firstUpdateAt)
        windowsDone = try container.decode([Bool].self, forKey: .windowsDone)
        // Plans stored before windows kept what they prepared: late updates to those windows are ignored.
        closed =
            try container.decodeIfPresent([ClosedWindow?].self, forKey: .closed)
            ?? Array(repeating: nil, count: ConversionWindows.count)
        valueSchema = try container.decodeIfPresent(ConversionValueSchema.self, forKey: .valueSchema)
        activityTotals =
            try container.decodeIfPresent([ActivityTotals].self, forKey: .activityTotals)
            ?? Array(repeating: ActivityTotals(), count: ConversionWindows.count)
        schemaValues =
            try container.decodeIfPresent([SchemaValue?].self, forKey: .schemaValues)
            ?? Array(repeating: nil, count: ConversionWindows.count)
        if let reported = try container.decodeIfPresent([ReportedValue].self, forKey: .reported) {
            self.reported = reported
        } else {
            // A plan stored before values were kept per update: its latest values, as of its first update.
            let values = try container.decodeIfPresent(PostbackFieldGating.Values.self, forKey: .values) ?? .init()
            self.reported =
                firstUpdateAt.map { [ReportedValue(time: $0, fine: values.fine, coarse: values.coarse)] } ?? []
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(attribution, forKey: .attribution)
        try container.encode(crowd, forKey: .crowd)
        try container.encodeIfPresent(firstUpdateAt, forKey: .firstUpdateAt)
        try container.encode(reported, forKey: .reported)
        try container.encode(windowsDone, forKey: .windowsDone)
        if closed.contains(where: { $0 != nil }) { try container.encode(closed, forKey: .closed) }
        try container.encodeIfPresent(valueSchema, forKey: .valueSchema)
        if valueSchema != nil {
            try container.encode(activityTotals, forKey: .activityTotals)
            try container.encode(schemaValues, forKey: .schemaValues)
        }
    }

    public var isFinished: Bool { windowsDone.allSatisfy { $0 } }

    /// The values window `index` collected by `time`: the latest fine and the latest coarse value
    /// reported at or before it (ties: the update processed last), and for a later window only those
    /// reported since it started: nothing carries over from an earlier window (spec section 4). Nil when
    /// the app reported nothing in the window by then: the window sends no postback.
    public func values(window index: Int, at time: Milliseconds, policy: TimePolicy) -> PostbackFieldGating.Values? {
        let start = ConversionWindows.start(of: index, development: attribution.isDevelopment).map {
            attribution.conversionTime + policy.milliseconds($0)
        }
        let upTo = reported.filter { value in value.time <= time && start.map { value.time >= $0 } ?? true }
        guard !upTo.isEmpty else { return nil }
        func latest<T>(_ field: KeyPath<ReportedValue, T?>) -> T? {
            upTo.enumerated().filter { $0.element[keyPath: field] != nil }
                .max { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }?.element[keyPath: field]
        }
        return .init(fine: latest(\.fine), coarse: latest(\.coarse))
    }

    /// The windows still open in which the app reported a value: each has a timer to close it. A window
    /// without a value sends nothing (spec section 4), so it needs none.
    public func windowsAwaitingClose(policy: TimePolicy) -> Set<Int> {
        Set(reported.compactMap { window(at: $0.time, policy: policy) }.filter { !windowsDone[$0] })
    }

    /// The window something stamped at `time` falls in (the first for anything before the conversion),
    /// nil once the last has ended.
    public func window(at time: Milliseconds, policy: TimePolicy) -> Int? {
        ConversionWindows.index(
            atOffset: time - attribution.conversionTime, development: attribution.isDevelopment, policy: policy)
    }

    /// When each window ends: a window's timer fires then (plus the close grace).
    public func windowEnds(policy: TimePolicy) -> [(window: Int, at: Milliseconds)] {
        (0..<ConversionWindows.count).map { index in
            let end = ConversionWindows.end(of: index, development: attribution.isDevelopment)
            return (index, attribution.conversionTime + policy.milliseconds(end))
        }
    }

    /// Applies a value update; a lock freezes the window and prepares its postbacks at once (still delayed).
    /// An update stamped before a done window closed (it was late through the pipeline, not from the app)
    /// counts as if it had come in time: see `closed`.
    public mutating func apply(
        _ update: AttributedUpdate, policy: TimePolicy, identifiers: PostbackIdentifiers
    ) -> [HeldPostback] {
        guard update.update.applies(to: attribution.conversionType) else { return [] }
        let offset = update.time - attribution.conversionTime
        if firstUpdateAt == nil,
            offset > policy.milliseconds(ConversionWindows.firstUpdateDeadline(for: attribution.conversionType))
        {
            return []
        }
        guard let index = window(at: update.time, policy: policy) else { return [] }
        // Done windows take only updates stamped before they closed; after a lock the device ignores them.
        if windowsDone[index] {
            guard let done = closed[index], update.time < done.at else { return [] }
        }
        firstUpdateAt = min(firstUpdateAt ?? update.time, update.time)
        reported.append(
            ReportedValue(
                time: update.time, fine: update.update.fineConversionValue, coarse: update.update.coarseConversionValue))
        var held: [HeldPostback] = []
        if update.update.lockPostback {
            // The device ignores updates after a lock in the same window: drop any that overtook the lock.
            let before = self  // read windows from a copy while `reported` changes (exclusive access)
            reported.removeAll { value in value.time > update.time && before.window(at: value.time, policy: policy) == index }
            let lockedAt = max(update.time, attribution.conversionTime)
            if windowsDone[index] {
                // A late lock: the window froze before it closed, so its postbacks count their delay from the lock.
                closed[index]?.at = lockedAt
                return reprepareClosedWindows(redrawing: index, policy: policy, identifiers: identifiers)
            }
            windowsDone[index] = true
            held = postbacks(for: index, preparedAt: lockedAt, policy: policy, identifiers: identifiers)
        }
        return held + reprepareClosedWindows(policy: policy, identifiers: identifiers)
    }

    /// Adds activity to its window's totals and evaluates the pinned schema: when the value changes
    /// (never lowered unless the schema allows it), it is applied as the app's own update would be, a
    /// locking rule locking the window. Activity in a done window (unless stamped before it closed, see
    /// `closed`) or without a schema is ignored.
    public mutating func record(
        _ activity: AttributedActivity, policy: TimePolicy, identifiers: PostbackIdentifiers
    ) -> [HeldPostback] {
        guard let valueSchema, activity.time >= attribution.conversionTime,
            let index = window(at: activity.time, policy: policy),
            !windowsDone[index] || (closed[index].map { activity.time < $0.at } ?? false)
        else { return [] }
        activityTotals[index].add(activity.activity)
        let evaluation = valueSchema.evaluate(window: index, totals: activityTotals[index], previous: schemaValues[index])
        guard evaluation.changed, let value = evaluation.value else { return [] }
        schemaValues[index] = value
        let update = PostbackUpdate(
            fineConversionValue: value.fine, coarseConversionValue: value.coarse, lockPostback: value.lock)
        return apply(
            AttributedUpdate(conversionIdentifier: attribution.conversionIdentifier, update: update, time: activity.time),
            policy: policy, identifiers: identifiers)
    }

    /// A newer conversion locked this one (re-engagement without the overlapping-conversions opt-in):
    /// the window open at `time` is locked and its postbacks prepared now (still delayed); later
    /// windows will not open.
    public mutating func supersede(
        at time: Milliseconds, policy: TimePolicy, identifiers: PostbackIdentifiers
    ) -> [HeldPostback] {
        let current = window(at: time, policy: policy)
        let at = max(time, attribution.conversionTime)
        var held: [HeldPostback] = []
        for index in windowsDone.indices where !windowsDone[index] {
            guard let current, index >= current else { continue }  // earlier windows close on their own timers
            windowsDone[index] = true
            if index == current {
                held += postbacks(for: index, preparedAt: at, policy: policy, identifiers: identifiers)
            }
        }
        // Late (the window's end came first): it froze at `time`, like a late lock.
        if let current, let done = closed[current], at < done.at {
            closed[current]?.at = at
            held += reprepareClosedWindows(redrawing: current, policy: policy, identifiers: identifiers)
        }
        return held
    }

    /// A window reached its end: its postbacks are prepared unless a lock already did, or no update came.
    public mutating func closeWindow(
        _ index: Int, policy: TimePolicy, identifiers: PostbackIdentifiers
    ) -> [HeldPostback] {
        guard windowsDone.indices.contains(index), !windowsDone[index] else { return [] }
        windowsDone[index] = true
        let end = windowEnds(policy: policy)[index].at
        return postbacks(for: index, preparedAt: end, policy: policy, identifiers: identifiers)
    }

    /// The winning postback for a window and, for the first window, one per non-winning network, with
    /// the values the window collected by `time`; none when the app reported nothing in it.
    /// Records what it prepared in `closed`.
    mutating func postbacks(
        for index: Int, preparedAt time: Milliseconds, policy: TimePolicy, identifiers: PostbackIdentifiers
    ) -> [HeldPostback] {
        let values = values(window: index, at: time, policy: policy)
        var window = ClosedWindow(at: time, values: values, postbacks: [])
        var held: [HeldPostback] = []
        if let values {
            for contender in contenders(window: index).indices {
                guard var order = order(window: index, contender: contender, values: values, identifier: "") else {
                    continue
                }
                let (impression, didWin) = contenders(window: index)[contender]
                let identifier = identifiers.identifier(
                    conversion: attribution.conversionIdentifier, window: index, impression: impression, didWin: didWin)
                order.payload.postbackIdentifier = identifier
                var draws = identifiers.delayDraws(
                    conversion: attribution.conversionIdentifier, window: index, impression: impression, didWin: didWin,
                    preparedAt: time)
                let delay = PostbackDelay.draw(
                    sequenceIndex: index, development: attribution.isDevelopment, policy: policy, using: &draws)
                window.postbacks.append(.init(contender: contender, identifier: identifier, dueAt: time + delay))
                held.append(HeldPostback(order: order, dueAt: time + delay))
            }
        }
        closed[index] = window
        return held
    }

    /// Who gets a postback for a window: the winner, and in the first window each non-winner.
    func contenders(window index: Int) -> [(impression: AttributedImpression, didWin: Bool)] {
        [(attribution.winner, true)] + (index == 0 ? attribution.nonWinners.map { ($0, false) } : [])
    }

    /// One contender's postback for a window with `values`, or nil when its tier gets none. Deterministic,
    /// so a held postback can be rebuilt byte for byte to be replaced.
    func order(window index: Int, contender: Int, values: PostbackFieldGating.Values, identifier: String)
        -> PostbackOrder?
    {
        let (impression, didWin) = contenders(window: index)[contender]
        guard let fields = PostbackFieldGating.fields(sequenceIndex: index, didWin: didWin, values: values, crowd: crowd)
        else { return nil }
        let payload = PostbackPayload(
            adNetworkIdentifier: impression.adNetworkIdentifier,
            sourceIdentifier: SourceIdentifierTruncation.truncate(
                impression.sourceIdentifier, digits: fields.sourceIdentifierDigits),
            advertisedItemIdentifier: attribution.advertisedItemIdentifier,
            publisherItemIdentifier: fields.includesPublisherItemIdentifier ? impression.publisherItemIdentifier : nil,
            conversionType: attribution.conversionType,
            marketplaceIdentifier: fields.includesMarketplace
                ? (attribution.marketplaceIdentifier ?? PostbackPayload.appStoreMarketplace) : nil,
            postbackIdentifier: identifier,
            postbackSequenceIndex: index, didWin: didWin)
        return PostbackOrder(
            payload: payload, adInteractionType: impression.interactionType,
            conversionValue: fields.conversionValue, coarseConversionValue: fields.coarseConversionValue,
            countryCode: fields.includesCountryCode ? attribution.countryCode : nil,
            isDevelopment: attribution.isDevelopment, impressionKind: impression.kind)
    }
}

/// Version-4 UUIDs from a caller's generator, so tests can replay a plan exactly.
public enum RandomUUID {
    /// Two draws of the generator (one per 8 bytes): with the kernel's generator a draw can be a system
    /// call, and a byte per draw made ids a noticeable part of the scheduler's CPU.
    public static func make(using generator: inout some RandomNumberGenerator) -> String {
        var bytes = [UInt8](repeating: 0, count: 16)
        for half in 0..<2 {
            let word = generator.next()
            for index in 0..<8 { bytes[half * 8 + index] = UInt8(truncatingIfNeeded: word >> (8 * index)) }
        }
        return shaped(bytes)
    }

    /// The first 16 of `bytes` (random, or a keyed hash's output) with the version-4 and variant bits
    /// set, as text.
    public static func shaped(_ bytes: [UInt8]) -> String {
        var bytes = Array(bytes.prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return text(bytes[...])
    }

    /// A fresh one from the system CSPRNG (`KernelRandom`: one system call per 16 ids): message
    /// and event ids. Foundation's `UUID()` opens, reads and closes `/dev/urandom` on Linux for each,
    /// which was about a tenth of ingest's CPU in batches.
    public static func make() -> String {
        var system = KernelRandom()
        return make(using: &system)
    }

    /// 16 bytes as a lowercase canonical UUID (8-4-4-4-12).
    public static func text(_ bytes: ArraySlice<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(unsafeUninitializedCapacity: 36) { buffer in
            var count = 0
            for (index, byte) in bytes.prefix(16).enumerated() {
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    buffer[count] = UInt8(ascii: "-")
                    count += 1
                }
                buffer[count] = digits[Int(byte >> 4)]
                buffer[count + 1] = digits[Int(byte & 0x0F)]
                count += 2
            }
            return count
        }
    }
}
