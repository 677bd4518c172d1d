import Foundation

/// Why ingest refuses a request before anything reaches the pipeline: the reason and plain words that
/// name the field. Ingest answers it as a 400 problem. The request types' `validate()` throw it, so the
/// rules live beside the types (and clients can run them before sending).
public struct RequestProblem: Error, Sendable, Hashable, CustomStringConvertible {
    public var reason: ProblemReason
    public var detail: String

    public init(_ reason: ProblemReason, _ detail: String) {
        self.reason = reason
        self.detail = detail
    }

    public var description: String { "\(reason.rawValue): \(detail)" }
}

/// The checks several request types share.
public enum RequestChecks {
    public static let deviceIdentifierBytes = 1...128

    /// A device identifier: 1–128 bytes (it becomes part of Redis keys).
    public static func deviceIdentifier(_ identifier: String) throws(RequestProblem) {
        guard deviceIdentifierBytes.contains(identifier.utf8.count) else {
            throw RequestProblem(.invalidDeviceIdentifier, "device-identifier must be 1–128 bytes")
        }
    }

    /// An `Idempotency-Key` header: 1–255 bytes (it becomes part of a Redis key).
    public static func idempotencyKey(_ key: String) throws(RequestProblem) {
        guard (1...255).contains(key.utf8.count) else {
            throw RequestProblem(.invalidIdempotencyKey, "Idempotency-Key must be 1–255 bytes (UTF-8)")
        }
    }

    /// A batch's `Idempotency-Key` header: 1–240 bytes, so that item *i*'s key `<header>:<i>` (up to
    /// `:999`) stays within the 255 of any key.
    public static func batchIdempotencyKey(_ key: String) throws(RequestProblem) {
        guard (1...240).contains(key.utf8.count) else {
            throw RequestProblem(
                .invalidIdempotencyKey, "a batch's Idempotency-Key must be 1–240 bytes (UTF-8; item i's key is <header>:<i>)")
        }
    }

    /// A conversion tag: the `conversion-tag` a re-engagement's 202 returned, its event identifier (a
    /// lowercase UUID). Anything else can name no conversion, so it is refused rather than kept waiting.
    public static func conversionTag(_ tag: String) throws(RequestProblem) {
        guard tag.utf8.count == 36, tag == tag.lowercased(), UUID(uuidString: tag) != nil else {
            throw RequestProblem(
                .invalidConversionTag, "conversionTag must be a conversion-tag a re-engagement's 202 returned (a lowercase UUID)")
        }
    }

    /// Every reported time: see `PlausibleTime`.
    public static func time(_ time: Milliseconds, field: String) throws(RequestProblem) {
        if let problem = PlausibleTime.problem(time, field: field) { throw RequestProblem(.invalidTime, problem) }
    }

    /// A URL postbacks or copies may go to (syntax, https, IP literals; the dispatcher checks resolved
    /// addresses before every POST). `postback-url` keeps its historical reason for a malformed URL.
    public static func destination(_ url: String, field: String, policy: DestinationPolicy) throws(RequestProblem) {
        guard let refusal = policy.check(url: url) else { return }
        let reason = refusal == .invalid && field == "postback-url" ? .invalidPostbackURL : ProblemReason(refusal)
        let detail =
            switch refusal {
            case .invalid: "\(field) must be an absolute https URL"
            case .notHTTPS: "\(field) must use https"
            case .privateAddress: "\(field) points at a loopback, private or otherwise non-public address"
            case .unresolvable: "\(field): its host does not resolve"
            }
        throw RequestProblem(reason, detail)
    }
}
