import AttributionModel
import Foundation
import Synchronization

/// The receiver's deliberate unreliability, so tests and the demo can show retries: fail the first N
/// attempts of every postback (per path), and/or a random share of attempts, with a 500 or by holding
/// the request past the sender's timeout. Changed at run time through `POST /control`; every attempt
/// is listed at `GET /attempts`. A lock, not an actor: the postback fast path (`PostbackFastPath`)
/// asks it on an event loop, without a hop.
final class FlakyMode: Sendable {
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

    private struct State {
        var settings: Settings
        var counts: [String: Int] = [:]
        var attempts: [Attempt] = []
    }

    private let state: Mutex<State>

    init(settings: Settings) { state = Mutex(State(settings: settings)) }

    var settings: Settings { state.withLock { $0.settings } }

    var attempts: [Attempt] { state.withLock { $0.attempts } }

    func update(_ settings: Settings) { state.withLock { $0.settings = settings } }

    /// In plain mode, records the attempt as accepted and returns true; otherwise records nothing and
    /// returns false (the caller then asks `shouldFail`, with the settings' delay first). One lock, so a
    /// `POST /control` racing in cannot slip between the check and the record.
    func acceptIfPlain(postbackIdentifier: String, path: String, at time: Milliseconds) -> Bool {
        state.withLock { state in
            let settings = state.settings
            guard settings.failFirst == 0, settings.failShare == 0, settings.delayMilliseconds == 0 else { return false }
            state.counts["\(path) \(postbackIdentifier)", default: 0] += 1
            state.attempts.append(Attempt(postbackIdentifier: postbackIdentifier, path: path, at: time, accepted: true))
            return true
        }
    }

    /// Whether this attempt is to fail; records it either way.
    func shouldFail(postbackIdentifier: String, path: String, at time: Milliseconds) -> Bool {
        let key = "\(path) \(postbackIdentifier)"
        return state.withLock { state in
            state.counts[key, default: 0] += 1
            let fail =
                state.counts[key]! <= state.settings.failFirst || Double.random(in: 0..<1) < state.settings.failShare
            state.attempts.append(Attempt(postbackIdentifier: postbackIdentifier, path: path, at: time, accepted: !fail))
            return fail
        }
    }
}
