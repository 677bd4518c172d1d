/// attribution-winner's decision for one message, as a pure function over the device's state: an
/// impression joins the pool; a conversion first settles (waits so impressions reported just after it
/// still compete), then is attributed or refused; updates and activity are routed to their conversion
/// or kept until it arrives. The service reads the state, calls `step` and writes what it returns; the
/// rule-level scenario runner calls the same `step` under a virtual clock.
public struct WinnerStep: Sendable {
    /// Which stream the message came from.
    public enum Input: Sendable {
        /// `verified`: impressions and updates are applied; conversions are put to settle.
        case verified
        /// `winner:settled`: conversions whose settle time has passed are attributed.
        case settled
    }

    public var policy: TimePolicy
    public var input: Input
    /// Wall-clock milliseconds a conversion waits before it is attributed; 0 attributes at once.
    public var settleMilliseconds: Milliseconds

    public init(policy: TimePolicy, input: Input, settleMilliseconds: Milliseconds) {
        self.policy = policy
        self.input = input
        self.settleMilliseconds = settleMilliseconds
    }

    /// Whose state a message reads and writes: one impression pool per device and advertised app. The
    /// device identifier stays in this state; nothing downstream of attribution-winner sees it.
    public struct Scope: Sendable, Hashable {
        public var device: String
        public var app: ItemIdentifier

        public init(device: String, app: ItemIdentifier) {
            self.device = device
            self.app = app
        }
    }

    public static func scope(of envelope: Envelope) -> Scope? {
        switch envelope.body {
        case .impressionVerified(let i): Scope(device: i.deviceIdentifier, app: i.payload.advertisedItemIdentifier)
        case .conversionVerified(let c): Scope(device: c.report.deviceIdentifier, app: c.report.advertisedItemIdentifier)
        case .updateVerified(let u): Scope(device: u.deviceIdentifier, app: u.advertisedItemIdentifier)
        case .activityVerified(let a): Scope(device: a.deviceIdentifier, app: a.advertisedItemIdentifier)
        default: nil
        }
    }

    /// The device whose re-engagements across apps (the yearly cap) a message needs: re-engagements only.
    public static func reengagementDevice(of envelope: Envelope) -> String? {
        guard case .conversionVerified(let c) = envelope.body, c.report.conversionType == .reengagement else { return nil }
        return c.report.deviceIdentifier
    }

    /// A re-engagement added to its device's history; entries at or before `dropThrough` fell out of
    /// the cap's period; the history is kept `keepFor` after its last entry.
    public struct ReengagementRecord: Sendable, Hashable {
        public var conversionIdentifier: String
        public var time: Milliseconds
        public var dropThrough: Milliseconds
        public var keepFor: Milliseconds

        public init(conversionIdentifier: String, time: Milliseconds, dropThrough: Milliseconds, keepFor: Milliseconds) {
            self.conversionIdentifier = conversionIdentifier
            self.time = time
            self.dropThrough = dropThrough
            self.keepFor = keepFor
        }

        /// The history as stored once the record is committed (appended, then trimmed). Later messages of
        /// the same batch see the history as read plus the batch's additions, untrimmed, as Redis does
        /// until the transaction runs: they append `time` only.
        public func apply(to history: inout [Milliseconds]) {
            history.append(time)
            history.removeAll { $0 <= dropThrough }
        }
    }

    public struct Effects: Sendable {
        /// The device's state after the message (always stored, kept `keepStateFor`).
        public var state: DeviceAttributionState
        public var keepStateFor: Milliseconds
        /// Messages for the scheduler (`attributions`).
        public var outputs: [Envelope] = []
        /// A conversion to hold until `dueAt`, then read back from `winner:settled`.
        public var settle: (message: Envelope, dueAt: Milliseconds)?
        public var reengagement: ReengagementRecord?
        /// A re-engagement's outcome, recorded under its conversion tag (its event id) for a request
        /// waiting to say it (`Prefer: wait`).
        public var outcome: (conversionTag: String, outcome: ConversionOutcome)?
        /// A conversion not attributed, with its reason (recorded on `rejected`, stamped with the conversion's time).
        /// A conversion not attributed: its reason, the `rejected` record, and the refusal list it is
        /// shown in (its advertised app's, like the verifier's refusals of the app's events).
        public var refusal:
            (reason: ConversionEligibility.Refusal, rejection: Rejection, at: Milliseconds, log: VerifierStep.RefusalLog)?
        /// Updates and activity refused here (`DeviceStateLimits`): the message's own, past the pending
        /// limit, and those that waited too long for their conversion. Recorded like `refusal`.
        public var rejections: [(rejection: Rejection, at: Milliseconds, log: VerifierStep.RefusalLog)] = []

        /// Every refusal this message produced, to record on `rejected` and in the refusal lists.
        public var allRejections: [(rejection: Rejection, at: Milliseconds, log: VerifierStep.RefusalLog)] {
            (refusal.map { [($0.rejection, $0.at, $0.log)] } ?? []) + rejections
        }
        public var counts: [StepCount] = []
    }

    /// Where a message stands on `verified` (stream positions: wall-clock ms of entry ids), for the
    /// settle rule: a conversion waits for the impressions the verifier wrote within the settle time
    /// after it, however far behind on `verified` attribution-winner is.
    public enum VerifiedPosition: Sendable, Hashable {
        /// Input `.verified`: where the verifier wrote this message.
        case writtenAt(Milliseconds)
        /// Input `.settled`: attribution-winner has read and finished every entry of the message's
        /// partition up to here; `verifierThrough`: the verifier holds no event of the partition's
        /// `events` taken up to here (nil: it holds none); `lastWritten`: `verified`'s last entry, read
        /// after the verifier's pending events (nil: empty or not known).
        case readThrough(Milliseconds, verifierThrough: Milliseconds? = nil, lastWritten: Milliseconds? = nil)
    }

    /// How soon a settled conversion that must wait for `verified` is looked at again: after about the
    /// span of `verified` still unread before its horizon (the winner reads it at least that fast when
    /// it keeps up), at least 10 ms and at most a second. A winner seconds behind looks again a few
    /// times, not every few milliseconds: each look costs Redis commands when Redis is busiest.
    static func recheckMilliseconds(unread: Milliseconds) -> Milliseconds { min(max(10, unread), 1_000) }

    /// One message against its device's state. `reengagements` are the device's re-engagement times
    /// across apps (for a re-engagement conversion); `now` is when a settling conversion starts waiting.
    public func step(
        _ state: DeviceAttributionState, message envelope: Envelope, reengagements: [Milliseconds], now: Milliseconds,
        verified position: VerifiedPosition? = nil
    ) -> StepOutcome<Effects> {
        guard Self.scope(of: envelope) != nil else {
            return .retry("attribution-winner takes verified impressions, conversions, updates and activity")
        }
        var effects = Effects(state: state, keepStateFor: Retention.deviceState(policy))
        switch envelope.body {
        case .impressionVerified(let impression):
            if effects.state.record(impression) { effects.counts.append(.lateImpression) }
        case .conversionVerified where effects.state.attributed(envelope.id):
            // Delivered again once attributed: the verifier wrote it twice (a replica's pending entry claimed
            // by another while the first still worked on it), or a second settle timer. Attributing it again
            // would supersede the conversion by itself and close its windows unsent.
            effects.counts.append(.redeliveredConversion)
        case .conversionVerified(let conversion) where input == .verified && settleMilliseconds > 0:
            var horizon: Milliseconds?
            if case .writtenAt(let written) = position { horizon = written + settleMilliseconds }
            effects.state.settle(conversion.report, conversionIdentifier: envelope.id, settlesAfter: horizon)
            effects.settle = (envelope, now + settleMilliseconds)
        case .conversionVerified(let conversion):
            if input == .settled,
                let unread = unreadBeforeHorizon(conversion, id: envelope.id, &effects.state, position, now: now)
            {
                // Behind on `verified`: impressions written just after the conversion are not read yet.
                effects.settle = (envelope, now + Self.recheckMilliseconds(unread: unread))
                effects.counts.append(.settleExtended)
            } else {
                attribute(conversion, envelope: envelope, reengagements: reengagements, into: &effects)
            }
        case .updateVerified(var report):
            report.eventIdentifier = envelope.id
            if effects.state.route(report) == nil, !effects.state.canKeepPending(update: true) {
                effects.rejections.append(
                    Self.pendingLimit(
                        "updates", DeviceStateLimits.pendingUpdates, envelope, report.advertisedItemIdentifier, report.time))
            } else if let routed = effects.state.receive(report) {
                effects.outputs.append(Envelope(id: envelope.id, time: envelope.time, body: .updateAttributed(routed)))
            }
        case .activityVerified(var report):
            report.eventIdentifier = envelope.id
            if effects.state.route(report) == nil, !effects.state.canKeepPending(update: false) {
                effects.rejections.append(
                    Self.pendingLimit(
                        "activity reports", DeviceStateLimits.pendingActivities, envelope, report.advertisedItemIdentifier,
                        report.time))
            } else if let routed = effects.state.receive(report) {
                effects.outputs.append(Envelope(id: envelope.id, time: envelope.time, body: .activityAttributed(routed)))
            }
        default: break
        }
        // Every write prunes by age, so an active device's state does not grow with its history; a
        // report already too old to wait is refused at once.
        let expired = effects.state.prune(now: now, policy: policy)
        // A tagged report names one conversion: when no attributed one of this app on this device had its
        // tag, the tag names nothing a postback could carry (Apple's invalidConversionTag), rather than
        // a conversion not found yet.
        for update in expired.updates {
            // Apple ignores a SKAdNetwork update with no pending postback (an organic install calls it too).
            if update.skadnetworkShape == true {
                effects.counts.append(.skadnetworkUpdateIgnored)
                continue
            }
            let (reason, detail) = Self.expiry(of: "update", tagged: update.update.conversionTag != nil)
            effects.rejections.append(
                Self.rejection(
                    reason, detail, event: update.eventIdentifier, app: update.advertisedItemIdentifier, at: update.time))
        }
        for activity in expired.activities {
            let (reason, detail) = Self.expiry(of: "activity", tagged: activity.conversionTag != nil)
            effects.rejections.append(
                Self.rejection(
                    reason, detail, event: activity.eventIdentifier, app: activity.advertisedItemIdentifier, at: activity.time))
        }
        return .done(effects)
    }

    /// Why a report that waited too long for its conversion is refused.
    static func expiry(of kind: String, tagged: Bool) -> (ProblemReason, String) {
        let within = "within 2 days (scaled, at least 10 minutes) of its time"
        return tagged
            ? (
                .invalidConversionTag,
                "no attributed re-engagement of this app on this device had this \(kind)'s conversionTag \(within) "
                    + "(a tag it never had, or its re-engagement was refused)"
            )
            : (.conversionNotFound, "no conversion took this \(kind) \(within)")
    }

    /// Whether a settled conversion must wait: attribution-winner has not yet read `verified` up to
    /// the conversion's horizon, by less than a waiting update is kept (`DeviceStateLimits.pendingKept`:
    /// 2 scaled days, at least 10 minutes of wall clock). The bound is for a `verified` entry that
    /// stays pending (its consumer died); the winner's lag alone is not, since the conversion's windows
    /// count from its own time, not from its attribution, and a scaled run's lag of seconds is days.
    /// Returns the span of `verified` (ms) still unread before the horizon, nil when it need not wait.
    ///
    /// It also waits while the verifier holds an event of the partition that ingest took before the
    /// conversion (`receivedAt`): an impression whose verifier replica died is verified only once another
    /// claims it (`CLAIM_IDLE_MS`, 30 s by default), after a conversion a live replica verified
    /// meanwhile, far past the settle time. Once the verifier has finished it, its verified form is
    /// somewhere before `verified`'s last entry, which becomes the horizon (`heldByVerifier` remembers
    /// to move it): a conversion looked at between the verifier's write and the winner's read of that
    /// impression still waits for it. Under the same bound, counted from the horizon of the moment.
    func unreadBeforeHorizon(
        _ conversion: VerifiedConversion, id conversionIdentifier: String, _ state: inout DeviceAttributionState,
        _ position: VerifiedPosition?, now: Milliseconds
    ) -> Milliseconds? {
        guard case .readThrough(let read, let verifierThrough, let lastWritten) = position,
            let index = state.settling.firstIndex(where: { $0.conversionIdentifier == conversionIdentifier }),
            var horizon = state.settling[index].settlesAfter
        else { return nil }
        if let verifierThrough, verifierThrough < conversion.report.receivedAt {
            guard now < horizon + DeviceStateLimits.pendingKept(policy) else { return nil }
            state.settling[index].heldByVerifier = true
            return conversion.report.receivedAt - verifierThrough
        }
        if state.settling[index].heldByVerifier == true {
            // Moved once, after the verifier finished: the bound counts from the new horizon.
            horizon = max(horizon, lastWritten ?? horizon)
            state.settling[index].settlesAfter = horizon
            state.settling[index].heldByVerifier = nil
        }
        guard read < horizon, now < horizon + DeviceStateLimits.pendingKept(policy) else { return nil }
        return horizon - read
    }

    private func attribute(
        _ conversion: VerifiedConversion, envelope: Envelope, reengagements: [Milliseconds], into effects: inout Effects
    ) {
        let report = conversion.report
        // The conversion id derives from the event id, so a redone batch makes the same one.
        switch effects.state.attribute(
            conversion, conversionIdentifier: envelope.id, deviceReengagements: reengagements, policy: policy)
        {
        case .success(let outcome):
            effects.outputs.append(
                Envelope(id: envelope.id, time: envelope.time, body: .conversionAttributed(outcome.attribution)))
            effects.outputs += Self.routed(outcome.updates, activities: effects.state.routePendingActivities(), by: envelope)
            effects.outputs += outcome.superseded.map {
                Envelope(
                    id: "\(envelope.id):supersedes:\($0)", time: report.time,
                    body: .conversionSuperseded(.init(conversionIdentifier: $0, supersededBy: envelope.id, time: report.time)))
            }
            if report.conversionType == .reengagement {
                let period = Retention.reengagements(policy)
                effects.reengagement = ReengagementRecord(
                    conversionIdentifier: envelope.id, time: report.time, dropThrough: report.time - period, keepFor: period)
                effects.outcome = (report.conversionTag ?? envelope.id, .created)
            }
            effects.counts.append(.conversion(.attributed))
        case .failure(let refusal):
            // Recorded with its reason, like the verifier's refusals: every event is accounted for.
            let rejection = Rejection(
                reason: RejectionReason(refusal), detail: "the conversion was not attributed (\(refusal.rawValue))",
                eventIdentifier: envelope.id)
            effects.refusal = (refusal, rejection, report.time, .app(report.advertisedItemIdentifier))
            if report.conversionType == .reengagement {
                effects.outcome = (report.conversionTag ?? envelope.id, .notCreated(refusal))
            }
            // Updates that waited on this conversion go to the one before it.
            effects.outputs += Self.routed(
                effects.state.routePending(), activities: effects.state.routePendingActivities(), by: envelope)
            effects.counts.append(.conversion(.refused(refusal)))
        }
    }

    /// An update or activity report refused because as many of its kind already wait on the device.
    static func pendingLimit(_ kind: String, _ limit: Int, _ envelope: Envelope, _ app: ItemIdentifier, _ time: Milliseconds)
        -> (rejection: Rejection, at: Milliseconds, log: VerifierStep.RefusalLog)
    {
        rejection(
            .pendingLimit, "\(limit) \(kind) already wait for a conversion on this device", event: envelope.id, app: app,
            at: time)
    }

    /// An update or activity report refused here, shown in its app's refusal list.
    static func rejection(_ reason: ProblemReason, _ detail: String, event: String?, app: ItemIdentifier, at time: Milliseconds)
        -> (rejection: Rejection, at: Milliseconds, log: VerifierStep.RefusalLog)
    {
        (Rejection(reason: reason, detail: detail, eventIdentifier: event ?? ""), time, .app(app))
    }

    /// Messages for updates and activity that waited in the state and now have their conversion. Each keeps
    /// its own event's id (so a redone batch writes the same messages); states stored before reports
    /// carried their event id fall back to one derived from the conversion's.
    static func routed(_ updates: [AttributedUpdate], activities: [AttributedActivity], by envelope: Envelope) -> [Envelope] {
        updates.enumerated().map { index, update in
            Envelope(
                id: update.eventIdentifier ?? "\(envelope.id):update:\(index)", time: update.time,
                body: .updateAttributed(update))
        }
            + activities.enumerated().map { index, activity in
                Envelope(
                    id: activity.eventIdentifier ?? "\(envelope.id):activity:\(index)", time: activity.time,
                    body: .activityAttributed(activity))
            }
    }
}
