import AttributionModel
import Foundation

/// The receiver's deliberate unreliability, so tests and the demo can show retries: fail the first N
/// attempts of every postback (per path), and/or a random share of attempts, with a 500 or by holding
/// the request past the sender's timeout. Changed at run time through `POST /control`; every attempt
/// is listed at `GET /attempts`.
actor FlakyMode {
    struct Settings: Codable, Sendable {
        /// Attempts of each postback (per path) answered with a failure before one is accepted.
        var failFirst: Int = 0
        /// Share of the remaining attempts answered with a failure, 0–1.
        var failShare: Double = 0
        /// `status` answers `failureStatus`; `timeout` holds the request `hangSeconds`, then answers 504;
        /// `redirect` answers 307 to `redirectTo` (a sender must not follow it).
        var failure: Failure = .status
        var redirectTo: String?
        var failureStatus: Int = 500
        var hangSeconds: Double = 30
        /// Every answer to a valid postback (accepted or failed) waits this long first: a slow ad network.
        var delayMilliseconds: Int = 0

        enum Failure: String, Codable, Sendable { case status, timeout, redirect }

        enum CodingKeys: String, CodingKey {
            case failFirst = "fail-first"
            case failShare = "fail-share"
            case failure
            case failureStatus = "failure-status"
            case hangSeconds = "hang-seconds"
            case delayMilliseconds = "delay-ms"
            case redirectTo = "redirect-to"
        }

        init() {}

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            failFirst = try c.decodeIfPresent(Int.self, forKey: .failFirst) ?? 0
            failShare = try c.decodeIfPresent(Double.self, forKey: .failShare) ?? 0
            failure = try c.decodeIfPresent(Failure.self, forKey: .failure) ?? .status
            failureStatus = try c.decodeIfPresent(Int.self, forKey: .failureStatus) ?? 500
            hangSeconds = try c.decodeIfPresent(Double.self, forKey: .hangSeconds) ?? 30
            delayMilliseconds = try c.decodeIfPresent(Int.self, forKey: .delayMilliseconds) ?? 0
            redirectTo = try c.decodeIfPresent(String.self, forKey: .redirectTo)
        }

        var problem: String? {
            if failFirst < 0 { return "fail-first must be ≥ 0" }
            if !(0...1).contains(failShare) { return "fail-share must be within 0–1" }
            if !(400...599).contains(failureStatus) { return "failure-status must be a 4xx or 5xx status" }
            if !(0...600).contains(hangSeconds) { return "hang-seconds must be within 0–600" }
            if !(0...600_000).contains(delayMilliseconds) { return "delay-ms must be within 0–600000" }
            if failure == .redirect, redirectTo?.isEmpty ?? true { return "failure redirect needs redirect-to" }
            return nil
        }
    }

    /// One POST that carried a valid postback, and how it was answered.
    struct Attempt: Codable, Sendable {
        var postbackIdentifier: String
        var path: String
        var at: Milliseconds
        var accepted: Bool

        enum CodingKeys: String, CodingKey {
            case postbackIdentifier = "postback-identifier"
            case path, at, accepted
        }
    }

    private(set) var settings: Settings
    private var counts: [String: Int] = [:]
    private(set) var attempts: [Attempt] = []

    init(settings: Settings) { self.settings = settings }

    func update(_ settings: Settings) { self.settings = settings }

    /// Whether this attempt is to fail; records it either way.
    func shouldFail(postbackIdentifier: String, path: String, at time: Milliseconds) -> Bool {
        let key = "\(path) \(postbackIdentifier)"
        counts[key, default: 0] += 1
        let fail = counts[key]! <= settings.failFirst || Double.random(in: 0..<1) < settings.failShare
        attempts.append(Attempt(postbackIdentifier: postbackIdentifier, path: path, at: time, accepted: !fail))
        return fail
    }
}
