/// The dispatcher's decisions, as pure functions: which destinations a due postback goes to (the ad
/// network; the advertiser's copy endpoint when it applies), and what one delivery attempt's answer
/// means: delivered, retried later (at most 9 retries within 9 days, waits counted from the failure),
/// or dead-lettered. Signing and the POST itself are the service's; it passes their results in.
public struct DispatcherStep: Sendable {
    public var policy: TimePolicy
    /// Where a copy endpoint's registrable domain ends (`CopyEndpoint.reportURL`).
    public var publicSuffixes: PublicSuffixList

    public init(policy: TimePolicy, publicSuffixes: PublicSuffixList = PublicSuffixList()) {
        self.policy = policy
        self.publicSuffixes = publicSuffixes
    }

    /// The deliveries one message makes, plus destinations that cannot be delivered at all (dead-lettered
    /// at once, with the reason).
    public struct Work: Sendable {
        public var deliveries: [DeliveryRetry]
        public var undeliverable: [(delivery: DeliveryRetry, reason: String)]
        /// In-flight records released before their outcome was written: failed attempts, not sent again now.
        public var lost: [DeliveryRetry] = []
    }

    /// What a lost attempt's record stands for (`Work.lost`): the dispatcher stopped (or stalled past the
    /// record's lease) while the attempt was under way.
    public static let lostAttempt: Response = .transportError("no outcome recorded: the dispatcher stopped during the attempt")

    /// The registrations a message's deliveries depend on: a due postback's ad network, and its
    /// advertised app when a copy may go (winners only, `CopyEndpoint.applies`); a retry's destination
    /// (still registered?).
    public static func registrationsNeeded(by envelope: Envelope) -> (network: String, app: String?)? {
        switch envelope.body {
        case .postbackDue(let order):
            let payload = order.payload
            return (payload.adNetworkIdentifier.rawValue, payload.didWin ? String(payload.advertisedItemIdentifier) : nil)
        case .deliveryRetry(let retry):
            let payload = retry.order.payload
            let copy = retry.destination == .advertiserCopy
            return (payload.adNetworkIdentifier.rawValue, copy ? String(payload.advertisedItemIdentifier) : nil)
        default:
            return nil
        }
    }

    /// A due postback is signed (`sign`, the service's key) and fanned out to its destinations; a retry is
    /// one delivery as stored, byte for byte, except a replayed dead letter, which is signed again: it may
    /// come long after the key that signed it was retired from the JWKS.
    public func work(
        for envelope: Envelope, networks: [String: AdNetworkRegistration], apps: [String: AdvertisedAppConfiguration],
        now: Milliseconds, sign: (PostbackOrder) throws -> String
    ) -> StepOutcome<Work> {
        switch envelope.body {
        case .postbackDue(let order):
            let body: String
            do { body = try sign(order) } catch { return .retry("signing failed: \(error)") }
            let payload = order.payload
            func delivery(_ destination: PostbackDestination, _ url: String) -> DeliveryRetry {
                DeliveryRetry(
                    postbackIdentifier: payload.postbackIdentifier, destination: destination, url: url, body: body, attempts: 0,
                    firstAttemptAt: now, lastError: "", order: order)
            }
            var work = Work(deliveries: [], undeliverable: [])
            if let url = networks[payload.adNetworkIdentifier.rawValue]?.postbackURL {
                work.deliveries.append(delivery(.adNetwork, url))
            } else {
                work.undeliverable.append(
                    (delivery(.adNetwork, ""), "ad network \(payload.adNetworkIdentifier) is not registered"))
            }
            if let app = apps[String(payload.advertisedItemIdentifier)],
                CopyEndpoint.applies(to: app, conversionType: payload.conversionType, didWin: payload.didWin),
                let url = app.attributionCopyEndpoint.flatMap({ CopyEndpoint.reportURL(for: $0, suffixes: publicSuffixes) })
            {
                work.deliveries.append(delivery(.advertiserCopy, url))
            }
            return .done(work)
        case .deliveryRetry(var retry):
            if retry.inFlight == true {
                retry.inFlight = nil
                return .done(Work(deliveries: [], undeliverable: [], lost: [retry]))
            }
            // A network or app deleted since the first attempt gets no more attempts (dead-lettered, so a
            // replay after registering it again sends it). A replay goes to the destination's URL now.
            let payload = retry.order.payload
            let current: String?
            let missing: String
            if retry.destination == .advertiserCopy {
                current = apps[String(payload.advertisedItemIdentifier)].flatMap { app in
                    app.attributionCopyEndpoint.flatMap { CopyEndpoint.reportURL(for: $0, suffixes: publicSuffixes) }
                }
                missing = "advertised app \(payload.advertisedItemIdentifier) is not registered or has no copy endpoint"
            } else {
                current = networks[payload.adNetworkIdentifier.rawValue]?.postbackURL
                missing = "ad network \(payload.adNetworkIdentifier) is not registered"
            }
            guard let current else { return .done(Work(deliveries: [], undeliverable: [(retry, missing)])) }
            if retry.replayed == true {
                retry.url = current
                do { retry.body = try sign(retry.order) } catch { return .retry("signing failed: \(error)") }
                retry.firstAttemptAt = now
                retry.replayed = nil
            }
            return .done(Work(deliveries: [retry], undeliverable: []))
        default:
            return .retry("dispatcher takes due postbacks and retries, not \(envelope.type.rawValue)")
        }
    }

    /// How one POST ended.
    public enum Response: Sendable, Hashable {
        /// Any 2xx.
        case delivered
        /// Any other status.
        case status(Int)
        /// A timeout or a connection error, described.
        case transportError(String)
        /// The destination policy (or DNS) refused the URL before anything was sent.
        case refused(DestinationPolicy.Refusal)
    }

    public enum Verdict: Sendable, Hashable {
        case delivered
        /// Tried again at `at` (the record carries the attempt count and last error).
        case retry(DeliveryRetry, at: Milliseconds)
        case dead(DeliveryRetry, reason: String)
    }

    /// What an attempt's answer means. A refused destination (http, a private address) cannot be helped
    /// by retrying, except a name that did not resolve, which may be a passing DNS failure.
    public func verdict(
        for delivery: DeliveryRetry, response: Response, now failedAt: Milliseconds,
        using generator: inout some RandomNumberGenerator
    ) -> (Verdict, StepCount) {
        var attempt = delivery
        attempt.attempts += 1
        let outcome: DeliveryOutcome
        var permanent = false
        switch response {
        case .delivered:
            return (.delivered, .delivery(.delivered, attempt: min(attempt.attempts, 10)))
        case .status(let code):
            outcome = .httpError
            attempt.lastError = "HTTP \(code)"
        case .transportError(let error):
            outcome = .transportError
            attempt.lastError = error
        case .refused(let refusal):
            outcome = .refusedDestination
            attempt.lastError = refusal.rawValue
            permanent = refusal != .unresolvable
        }
        let count = StepCount.delivery(outcome, attempt: min(attempt.attempts, 10))
        guard !permanent,
            let delay = RetrySchedule.delay(afterFailedAttempts: attempt.attempts, policy: policy, using: &generator)
        else { return (.dead(attempt, reason: attempt.lastError), count) }
        return (.retry(attempt, at: failedAt + delay), count)
    }
}

extension DispatcherStep {
    /// The record kept while `delivery`'s attempt runs past its batch, released at `leaseUntil` if its
    /// outcome is never written.
    public static func inFlightRecord(for delivery: DeliveryRetry) -> DeliveryRetry {
        var record = delivery
        record.inFlight = true
        return record
    }

    /// A delivery not attempted because its destination's circuit is open (its probe under way) or its
    /// queue is full: tried again at `until` without spending a retry, unless the postback's 9 days
    /// (scaled) since its first attempt have already passed `now`, which dead-letters it as a last
    /// failed retry would. (Judged at `now`, not at `until`: a short wait for a busy destination must
    /// not end a postback whose days are not over, however short a scaled day is.)
    public func deferral(of delivery: DeliveryRetry, until: Milliseconds, reason: String, now: Milliseconds) -> Verdict {
        var record = delivery
        record.lastError = reason
        if now > delivery.firstAttemptAt + policy.milliseconds(RetrySchedule.limit) {
            return .dead(record, reason: "\(reason); its 9 days passed while the destination was unavailable")
        }
        return .retry(record, at: until)
    }
}

/// How a delivery attempt ended, as the deliveries metric labels it.
public enum DeliveryOutcome: String, Sendable, Hashable {
    case delivered
    case httpError = "http-error"
    case transportError = "transport-error"
    case refusedDestination = "refused-destination"
}
