import AttributionCrypto
import AttributionModel
import Foundation
import HTTPTypes
import Logging
import ServiceRuntime

/// What the receiver does with one POSTed body, HTTP aside: verify it, fail on purpose when flaky mode
/// says so, record the first copy, acknowledge. The router (`ReceiverRouter`) and the fast path
/// (`PostbackFastPath`) both answer through it, so a postback is answered alike on either.
struct ReceiverIntake: Sendable {
    let log: PostbackLog
    let keys: KeySetCache
    let flaky: FlakyMode
    let collector: Collector?
    let logger: Logger
    /// When a signature is checked: before answering (`check`, the default), or `later`: the fast path
    /// records the postback unchecked and whoever reads the file verifies it (the benchmark does, after
    /// its ramp, so the ad network's ECDSA work is not counted against the pipeline's cores).
    var signatures: SignatureCheck = .check

    enum SignatureCheck: String, Sendable, CaseIterable {
        case check, later
    }

    /// An answer, for either path to write.
    struct Answer: Sendable {
        var status: HTTPResponse.Status
        var contentType = "application/json"
        var location: String?
        var body: Data
    }

    /// The answer when it needs no waiting, as it almost always can: an AdAttributionKit body whose kid
    /// the cached key set holds, flaky mode plain (no failures, no delay), no collector. Nil otherwise:
    /// then `answer(body:path:)` gives it (it may fetch keys, wait, or fail on purpose).
    func answerAtOnce(body: Data, path: String) -> Answer? {
        guard collector == nil, let keySet = keys.cached else { return nil }
        let postback: VerifiedPostback
        do {
            guard try PostbackBodyVerifier.kind(of: body) == .adAttributionKit else { return nil }
            let parsed = try PostbackVerifier.parse(body: body)
            guard keySet.key(withID: parsed.keyID) != nil else { return nil }
            postback =
                signatures == .later
                ? try PostbackVerifier.unchecked(parsed) : try PostbackVerifier.verify(parsed, keys: keySet)
        } catch {
            return rejected(error, path: path)
        }
        let now = WallClock.nowMilliseconds()
        guard flaky.acceptIfPlain(postbackIdentifier: postback.payload.postbackIdentifier, path: path, at: now) else {
            return nil
        }
        return accepted(postback, body: body, path: path, at: now).answer
    }

    /// The answer to any body, waiting where it must: a key set fetch for an unknown kid, flaky mode's
    /// delay or hang.
    func answer(body: Data, path: String) async -> Answer {
        let postback: VerifiedPostback
        do {
            postback = try await ReceiverRouter.verify(body, keys: keys)
        } catch let error as JWSError {
            return rejected(error, path: path)
        } catch {
            // The key set could not be fetched: not the sender's fault, so an answer it will retry.
            return Self.problem(.serviceUnavailable, reason: "keys-unavailable", detail: "\(error)")
        }
        let now = WallClock.nowMilliseconds()
        let delay = flaky.settings.delayMilliseconds
        if delay > 0 { try? await Task.sleep(for: .milliseconds(delay)) }
        if flaky.shouldFail(postbackIdentifier: postback.payload.postbackIdentifier, path: path, at: now) {
            let settings = flaky.settings
            switch settings.failure {
            case .timeout:
                try? await Task.sleep(for: .milliseconds(Int64(settings.hangSeconds * 1000)))
                return Answer(status: .gatewayTimeout, body: Data())
            case .redirect where settings.redirectTo != nil:
                return Answer(status: .temporaryRedirect, location: settings.redirectTo, body: Data())
            default:
                return Self.problem(
                    .init(code: settings.failureStatus), reason: "flaky-receiver",
                    detail: "failing on purpose (fail-first \(settings.failFirst), fail-share \(settings.failShare))")
            }
        }
        let (answer, isNew) = accepted(postback, body: body, path: path, at: now)
        // Counted once: a redelivered postback (same path and id) is acknowledged, not collected again.
        if isNew, let collector { await collector.collect(postback) }
        return answer
    }

    /// Records the first copy; duplicates are answered 200 too: the sender did nothing wrong by retrying.
    private func accepted(_ postback: VerifiedPostback, body: Data, path: String, at now: Milliseconds) -> (
        answer: Answer, isNew: Bool
    ) {
        let isNew: Bool
        do {
            isNew = try log.record(postback, path: path, body: body, receivedAt: now)
        } catch {
            // Not written, so not seen: the sender's retry gets another chance.
            return (Self.problem(.internalServerError, reason: "not-recorded", detail: "\(error)"), false)
        }
        logger.debug(
            "Accepted postback",
            metadata: [
                "postback.identifier": "\(postback.payload.postbackIdentifier)",
                "postback.ad_network": "\(postback.payload.adNetworkIdentifier)",
                "postback.sequence_index": "\(postback.payload.postbackSequenceIndex)",
                "postback.did_win": "\(postback.payload.didWin)", "postback.path": "\(path)",
                "postback.duplicate": "\(!isNew)",
            ])
        return (Answer(status: .ok, body: Acknowledgement.json(postback.payload.postbackIdentifier, duplicate: !isNew)), isNew)
    }

    private func rejected(_ error: JWSError, path: String) -> Answer {
        log.countRejected()
        logger.debug("Rejected postback", metadata: ["postback.path": "\(path)", "postback.reason": "\(error)"])
        return Self.problem(.badRequest, reason: error.code.rawValue, detail: error.reason)
    }

    static func problem(_ status: HTTPResponse.Status, reason: String, detail: String) -> Answer {
        let problem = ProblemDetails(status: status, reason: reason, detail: detail)
        return Answer(
            status: status, contentType: "application/problem+json",
            body: (try? JSONCoding.encoder.encode(problem)) ?? Data("{}".utf8))
    }

    struct Acknowledgement: Codable {
        var postbackIdentifier: String
        var duplicate: Bool

        /// The answer's body: written by hand for an id that stands between quotes as it is
        /// (`PostbackLog.plainString`; a UUID always), as JSONEncoder writes it (sorted keys). The
        /// encoder was 3 % of the receiver's CPU, which the benchmark counts against the pipeline's cores.
        static func json(_ postbackIdentifier: String, duplicate: Bool) -> Data {
            guard let plain = PostbackLog.plainString(postbackIdentifier) else {
                let acknowledgement = Acknowledgement(postbackIdentifier: postbackIdentifier, duplicate: duplicate)
                return (try? JSONCoding.encoder.encode(acknowledgement)) ?? Data("{}".utf8)
            }
            return Data("{\"duplicate\":\(duplicate),\"postback-identifier\":\"\(plain)\"}".utf8)
        }

        enum CodingKeys: String, CodingKey {
            case postbackIdentifier = "postback-identifier"
            case duplicate
        }
    }
}
