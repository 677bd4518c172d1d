/// The scheduler's decision for one message, as a pure function: a new attribution gets its plan (tier
/// from its crowds, the app's schema pinned); updates, activity, supersessions and window timers change
/// the plan, set a window's timer when the first value lands in it, and prepare (or swap) held
/// postbacks. The scheduler service reads the plan and crowd counters, calls `step`, and writes what it
/// returns; the rule-level scenario runner calls the same `step` under a virtual clock.
public struct SchedulerStep: Sendable {
    public var policy: TimePolicy
    public var thresholds: CrowdTierThresholds
    /// Wall-clock ms a window's timer waits past its end for updates still on their way.
    public var windowCloseGraceMilliseconds: Milliseconds
    public var identifiers: PostbackIdentifiers

    public init(
        policy: TimePolicy, thresholds: CrowdTierThresholds, windowCloseGraceMilliseconds: Milliseconds,
        identifiers: PostbackIdentifiers
    ) {
        self.policy = policy
        self.thresholds = thresholds
        self.windowCloseGraceMilliseconds = windowCloseGraceMilliseconds
        self.identifiers = identifiers
    }

    /// What the plan key holds.
    public enum PlanState: Sendable, Hashable {
        /// No plan yet (or one that expired).
        case absent
        /// The marker a finished plan leaves: everything for the conversion is acknowledged and ignored.
        case finished
        case plan(PostbackPlan)
    }

    /// A timer message due at `dueAt` (a window's end plus grace).
    public struct Timer: Sendable, Hashable {
        public var identifier: String
        public var dueAt: Milliseconds
        public var message: Envelope
    }

    public struct Effects: Sendable {
        /// The plan state to store; nil when the message changed nothing (a redelivery, a finished plan).
        public var store: PlanState?
        /// With a stored plan: when its key expires (`Retention.plan`), an absolute time that later writes
        /// do not push back. No timer wakes a plan to end it.
        public var expiresAt: Milliseconds?
        /// When set, the finished marker is written beside the plan to expire then: from the plan's
        /// expiry on, everything for the conversion is acknowledged and ignored. A new plan writes it;
        /// a plan whose expiry moved later, or that finished with a postback still held, writes it again.
        public var markerExpiresAt: Milliseconds?
        public var timers: [Timer] = []
        /// New held postbacks, and replacements of held ones (`replacing` set).
        public var held: [HeldPostback] = []
        /// A new attribution counted in its crowds.
        public var crowd: CrowdIncrement?
        public var counts: [StepCount] = []

        static let unchanged = Effects(store: nil)
    }

    /// The conversion a message is about (its plan's key).
    public static func conversionIdentifier(of envelope: Envelope) -> String? {
        switch envelope.body {
        case .conversionAttributed(let a): a.conversionIdentifier
        case .updateAttributed(let u): u.conversionIdentifier
        case .windowClosed(let w): w.conversionIdentifier
        case .conversionSuperseded(let c): c.conversionIdentifier
        case .activityAttributed(let a): a.conversionIdentifier
        default: nil
        }
    }

    /// One message against its conversion's plan state. `crowd` holds the counters read for this batch's
    /// attributions (and counts each new one for the rest of the batch); `schema` is the advertised app's
    /// schema in force, pinned to a new plan; `now` decides whether a held postback can still be swapped
    /// and how long a finished plan is kept.
    public func step(
        _ state: PlanState, message envelope: Envelope, crowd: inout CrowdCounts, schema: ConversionValueSchema?,
        now: Milliseconds
    ) -> StepOutcome<Effects> {
        guard let id = Self.conversionIdentifier(of: envelope) else {
            return .retry("scheduler takes attributions, attributed updates and window timers")
        }
        // Everything for a finished conversion (a late update, a redelivery) is acknowledged and ignored.
        if state == .finished { return .done(.unchanged) }
        var effects = Effects(store: nil)
        var held: [HeldPostback] = []
        var late = false  // stamped before a window that already closed: what it prepares is counted
        var plan: PostbackPlan
        switch (envelope.body, state) {
        case (.conversionAttributed, .plan):
            return .done(.unchanged)  // already planned: a redelivery
        case (.conversionAttributed(let attribution), _):
            let sizes = crowd.sizes(for: attribution, policy: policy)
            // A development conversion (Xcode, TestFlight: publisher 0) gets every field anyway and is no
            // real person: counted, test traffic would raise the tiers of production conversions.
            if !attribution.isDevelopment { effects.crowd = crowd.count(attribution, policy: policy) }
            plan = PostbackPlan(
                attribution: attribution, crowd: CrowdAssessment.assess(sizes, thresholds: thresholds), valueSchema: schema)
        case (.updateAttributed(let update), .plan(let current)):
            plan = current
            late = isLate(plan, stampedAt: update.time, now: now)
            held = plan.apply(update, policy: policy, identifiers: identifiers)
        case (.activityAttributed(let activity), .plan(let current)):
            plan = current
            late = isLate(plan, stampedAt: activity.time, now: now)
            held = plan.record(activity, policy: policy, identifiers: identifiers)
        case (.updateAttributed, _), (.activityAttributed, _):
            // Attributions and updates travel one stream in order, but replicas may take neighbours out of
            // order: an update whose plan is not written yet is retried after the claim idle time.
            return .retry("no postback plan yet for conversion \(id)")
        case (.conversionSuperseded(let superseded), .plan(let current)):
            plan = current
            late = isLate(plan, stampedAt: superseded.time, now: now)
            held = plan.supersede(at: superseded.time, policy: policy, identifiers: identifiers)
        case (.windowClosed(let timer), .plan(let current)):
            // Window `count` is the wake timer kept plans had before they expired on their own: it changes nothing.
            plan = current
            held = plan.closeWindow(timer.window, policy: policy, identifiers: identifiers)
        case (.conversionSuperseded, _), (.windowClosed, _):
            return .done(.unchanged)  // plan finished and removed
        default:
            return .retry("unexpected \(envelope.type.rawValue)")
        }
        let previous: PostbackPlan? = if case .plan(let before) = state { before } else { nil }
        held += setTimers(
            &plan, opening: previous?.windowsAwaitingClose(policy: policy) ?? [], now: now, effects: &effects)
        let natural = Retention.plan(plan, policy: policy)
        if !plan.isFinished {
            effects.store = .plan(plan)
            effects.expiresAt = natural
            // A new plan's marker, moved when the plan's expiry moves later (a postback held past it).
            if previous.map({ natural > Retention.plan($0, policy: policy) }) ?? true {
                effects.markerExpiresAt = natural + Retention.finishedMarker(policy)
            }
        } else if let releasing = plan.keptUntil(now: now, policy: policy) {
            // Every window done, but a postback still held (a late update may yet swap it) or a window that
            // closed with nothing to send still preparable: the plan stays until then, and the conversion is
            // finished from then on.
            effects.store = .plan(plan)
            effects.expiresAt = releasing
            effects.markerExpiresAt = max(releasing, natural) + Retention.finishedMarker(policy)
        } else {
            effects.store = .finished
        }
        for postback in held {
            if let old = postback.replacing {
                // Past its due time the old one is released (or about to be): the swap will find nothing.
                effects.counts.append(.latePostback(old.dueAt > now ? .swapped : .tooLate))
            } else if late {
                effects.counts.append(.latePostback(.prepared))
            }
        }
        effects.held = held
        return .done(effects)
    }

    /// Whether something stamped at `time` reached the plan late through the pipeline: after a window it
    /// belongs to closed (`PostbackPlan.isLate`), or after the close of its own window, which has no timer
    /// when no value had come for it (what it prepares is counted in `scheduler_late_postbacks_total`).
    func isLate(_ plan: PostbackPlan, stampedAt time: Milliseconds, now: Milliseconds) -> Bool {
        if plan.isLate(stampedAt: time) { return true }
        guard let window = plan.window(at: time, policy: policy) else { return false }
        return plan.windowEnds(policy: policy)[window].at + closeGrace(plan) <= now
    }

    func closeGrace(_ plan: PostbackPlan) -> Milliseconds {
        ConversionWindows.closeGrace(
            configured: windowCloseGraceMilliseconds, development: plan.attribution.isDevelopment, policy: policy)
    }

    /// The window timers a message's values call for. A window sends nothing unless the app reported a
    /// value in it (spec section 4), so its timer is set only when the first one lands there (`opening`:
    /// the windows awaiting their close before the message), not for every window of every conversion.
    /// A window already past its close (the value was late through the pipeline) closes at once instead.
    func setTimers(
        _ plan: inout PostbackPlan, opening before: Set<Int>, now: Milliseconds, effects: inout Effects
    ) -> [HeldPostback] {
        let id = plan.attribution.conversionIdentifier
        let grace = closeGrace(plan)
        let ends = plan.windowEnds(policy: policy)
        var held: [HeldPostback] = []
        for window in plan.windowsAwaitingClose(policy: policy).subtracting(before).sorted() {
            let at = ends[window].at
            guard at + grace > now else {
                held += plan.closeWindow(window, policy: policy, identifiers: identifiers)
                continue
            }
            let timer = Envelope(
                id: "\(id):\(window)", time: at, body: .windowClosed(.init(conversionIdentifier: id, window: window, time: at)))
            effects.timers.append(Timer(identifier: "\(id):\(window)", dueAt: at + grace, message: timer))
        }
        return held
    }
}
