/// Late updates: an update stamped before a window closed can reach the scheduler after it (a stage
/// died holding it and the claim waited, Redis restarted, a replica stalled). A plan keeps what each
/// closed window prepared, so such an update still counts while the window's postbacks are held.
extension PostbackPlan {
    /// A done window: the moment whose values its postbacks carry (its end, its lock or the superseding
    /// conversion), those values (nil: no update by then, so none were prepared), and each postback's
    /// contender (0 the winner, then the non-winners in order), id and due time.
    public struct ClosedWindow: Sendable, Hashable, Codable {
        public var at: Milliseconds
        public var values: PostbackFieldGating.Values?
        public var postbacks: [Prepared]

        public struct Prepared: Sendable, Hashable, Codable {
            public var contender: Int
            public var identifier: String
            public var dueAt: Milliseconds
        }
    }

    /// Whether something stamped at `time` reaches a window that closed at or after it: it was late
    /// through the pipeline (what it changes is counted in `scheduler_late_postbacks_total`).
    public func isLate(stampedAt time: Milliseconds) -> Bool { closed.contains { $0.map { time <= $0.at } ?? false } }

    /// When the last postback this plan prepared is released: until then a late update may still change
    /// it, so the scheduler keeps a finished plan that long.
    public var lastDueAt: Milliseconds? { closed.compactMap { $0?.postbacks.map(\.dueAt).max() }.max() }

    /// Until when a late update could still prepare a window that closed with nothing to send (the app
    /// had reported no value in it by then): the shortest delay after its close. A postback prepared
    /// later would already be due, so the window is left alone from then on.
    public func lastPreparableAt(policy: TimePolicy) -> Milliseconds? {
        closed.indices.compactMap { index -> Milliseconds? in
            guard let window = closed[index], window.postbacks.isEmpty else { return nil }
            let shortest = PostbackDelay.range(sequenceIndex: index, development: attribution.isDevelopment).lowerBound
            return window.at + policy.milliseconds(shortest)
        }.max()
    }

    /// For a finished plan that a late update may still change after `now` (a postback is still held,
    /// or a window that closed with nothing to send could still be prepared): until when. The scheduler
    /// keeps the plan until then (nil: it can leave only its marker, or is not finished).
    public func keptUntil(now: Milliseconds, policy: TimePolicy) -> Milliseconds? {
        guard isFinished, let last = [lastDueAt, lastPreparableAt(policy: policy)].compactMap({ $0 }).max(), last > now
        else { return nil }
        return last
    }

    /// After a late update: every closed window whose values changed is prepared now if it had no
    /// postbacks (no update had come by its close), or else re-prepared in place: the same ids and due
    /// times (new ones for the window `redrawing`, locked late), the new values. The scheduler swaps them
    /// only while they are still held.
    mutating func reprepareClosedWindows(
        redrawing relocked: Int? = nil, policy: TimePolicy, identifiers: PostbackIdentifiers
    ) -> [HeldPostback] {
        var held: [HeldPostback] = []
        for index in closed.indices {
            guard let window = closed[index], let values = values(window: index, at: window.at, policy: policy),
                values != window.values || index == relocked
            else { continue }
            guard let previous = window.values, !window.postbacks.isEmpty else {
                held += postbacks(for: index, preparedAt: window.at, policy: policy, identifiers: identifiers)
                continue
            }
            var prepared: [ClosedWindow.Prepared] = []
            for postback in window.postbacks {
                // The contenders a tier allows do not depend on the values: both orders exist.
                guard
                    let old = order(
                        window: index, contender: postback.contender, values: previous, identifier: postback.identifier),
                    let new = order(
                        window: index, contender: postback.contender, values: values, identifier: postback.identifier)
                else { continue }
                var dueAt = postback.dueAt
                if index == relocked {
                    let (impression, didWin) = contenders(window: index)[postback.contender]
                    var draws = identifiers.delayDraws(
                        conversion: attribution.conversionIdentifier, window: index, impression: impression, didWin: didWin,
                        preparedAt: window.at)
                    dueAt =
                        window.at
                        + PostbackDelay.draw(
                            sequenceIndex: index, development: attribution.isDevelopment, policy: policy, using: &draws)
                }
                prepared.append(.init(contender: postback.contender, identifier: postback.identifier, dueAt: dueAt))
                if new != old || dueAt != postback.dueAt {
                    held.append(HeldPostback(order: new, dueAt: dueAt, replacing: .init(order: old, dueAt: postback.dueAt)))
                }
            }
            closed[index] = ClosedWindow(at: window.at, values: values, postbacks: prepared)
        }
        return held
    }
}
