import Foundation
import NIOCore

/// What one request of a load run came to, counted per event: accepted (202, or a batch item's 202),
/// shed (refused at once under overload, the whole request or a batch item: 429, or 503 `overloaded`
/// or `pipeline-lagging`), or failed (everything else: no answer in time, other 5xx, refused items).
struct LoadOutcome: Sendable {
    var kind: LoadEventKind
    var milliseconds: Double
    var events: Int
    /// How late the request was handed to the HTTP client after it was due: the load tool's own lag.
    var lateMilliseconds = 0.0
    /// From the request's write to its whole answer: the server's part of `milliseconds`, without the
    /// wait for a free connection (nil for a request that got no answer).
    var answerMilliseconds: Double?
    var accepted = 0
    var shed = 0
    var failed = 0
    var timedOut = false
    /// "<status> <reason>" of a request refused as a whole, or of refused batch items.
    var refusals: [String: Int] = [:]
    /// The devices whose event ingest accepted (the request's `firstDevice` plus the item's position).
    var acceptedDevices: [Int] = []

    /// The 503 reasons that mean "overloaded, come back later", as opposed to a fault.
    static let shedReasons: Set<String> = ["overloaded", "pipeline-lagging", "rate-limited"]

    static func isShed(status: Int, reason: String) -> Bool {
        status == 429 || (status == 503 && shedReasons.contains(reason))
    }

    init(kind: LoadEventKind, milliseconds: Double, events: Int) {
        self.kind = kind
        self.milliseconds = milliseconds
        self.events = events
    }

    /// Sorts an answer's events: a single route answers 202 per event; a batch route 200 with one
    /// result per item, in order.
    init(
        kind: LoadEventKind, milliseconds: Double, events: Int, firstDevice: Int, batch: Bool, status: Int,
        body: ByteBuffer?
    ) {
        self.init(kind: kind, milliseconds: milliseconds, events: events)
        switch status {
        case 202 where !batch:
            accepted = events
            acceptedDevices = [firstDevice]
        case 200 where batch:
            guard let body, let answer = try? JSONDecoder().decode(BatchAnswer.self, from: body) else {
                failed = events
                refusals["200 unreadable", default: 0] += events
                return
            }
            for (position, item) in answer.results.prefix(events).enumerated() {
                if item.status == 202 {
                    accepted += 1
                    acceptedDevices.append(firstDevice + position)
                } else {
                    refusals["\(item.status) \(item.reason ?? "")", default: 0] += 1
                    // An item past the caller's rate (or shed by ingest) is refused for load, not for its content.
                    if Self.isShed(status: item.status, reason: item.reason ?? "") { shed += 1 }
                }
            }
            failed = events - accepted - shed
        default:
            let reason = body.flatMap(HTTPAnswer.reason(in:)) ?? ""
            refusals["\(status) \(reason)", default: 0] += events
            if Self.isShed(status: status, reason: reason) {
                shed = events
            } else {
                failed = events
            }
        }
    }

    private struct BatchAnswer: Decodable {
        var results: [Item]
        struct Item: Decodable {
            var status: Int
            var reason: String?
        }
    }
}

/// A load run's figures, printed as JSON on the last line. Counts are events; latencies are per request,
/// from when it was due, over every request and over the accepted ones alone.
struct LoadFigures: Codable {
    var offeredPerSecond: Int
    var batch: Int
    var seconds: Double
    var requests: Int
    /// Events sent (in requests of `batch` events).
    var sent: Int
    var accepted: Int
    var shed: Int
    var failed: Int
    /// Events in requests not answered within the request timeout (counted in `failed`).
    var timedOut: Int
    var acceptedByKind: [LoadEventKind: Int]
    var refusals: [String: Int]
    var achievedPerSecond: Double
    var p50Milliseconds: Double
    var p99Milliseconds: Double
    var p999Milliseconds: Double
    var maxMilliseconds: Double
    /// Requests with at least one accepted event, and their latency percentiles.
    var acceptedRequests: Int
    var acceptedP50Milliseconds: Double
    var acceptedP99Milliseconds: Double
    var acceptedP999Milliseconds: Double
    var acceptedMaxMilliseconds: Double
    /// The accepted requests' p99 per kind of event (a campaign's batches differ by route).
    var acceptedP99MillisecondsByKind: [LoadEventKind: Double]
    /// The p99 of how late requests left this tool after they were due: when it is large, the
    /// generator (on the same cores as the server) was the bottleneck, not the server.
    var lateP99Milliseconds: Double
    /// The p50 and p99 of the answered requests' time from their write to their answer: when these are
    /// small and the latency large, requests waited for one of the `--connections`.
    var answerP50Milliseconds: Double
    var answerP99Milliseconds: Double
    var acceptedAnswerP99Milliseconds: Double
    var signingSeconds: Double
    /// A campaign's devices whose impression, install and value update were all accepted: the
    /// installs that get a first-window postback (an install without an accepted update has no window,
    /// one without an accepted impression nothing to attribute). nil for impressions alone.
    var completeDevices: Int?
    /// CPU seconds this tool spent while sending and reading answers (signing excluded): on a machine
    /// it shares with the server, what the generator took from it.
    var sendingCPUSeconds = 0.0

    init(rate: Int, batch: Int, seconds: Double, signingSeconds: Double, outcomes: [LoadOutcome]) {
        let all = outcomes.map(\.milliseconds).sorted()
        let acceptedRequests = outcomes.filter { $0.accepted > 0 }.map(\.milliseconds).sorted()
        offeredPerSecond = rate
        self.batch = batch
        self.seconds = seconds
        self.signingSeconds = signingSeconds
        requests = outcomes.count
        sent = outcomes.reduce(0) { $0 + $1.events }
        accepted = outcomes.reduce(0) { $0 + $1.accepted }
        shed = outcomes.reduce(0) { $0 + $1.shed }
        failed = outcomes.reduce(0) { $0 + $1.failed }
        timedOut = outcomes.filter(\.timedOut).reduce(0) { $0 + $1.events }
        acceptedByKind = outcomes.reduce(into: [:]) { $0[$1.kind, default: 0] += $1.accepted }
        refusals = outcomes.reduce(into: [:]) { totals, outcome in totals.merge(outcome.refusals, uniquingKeysWith: +) }
        achievedPerSecond = Double(accepted) / seconds
        p50Milliseconds = Self.percentile(all, 0.5)
        p99Milliseconds = Self.percentile(all, 0.99)
        p999Milliseconds = Self.percentile(all, 0.999)
        maxMilliseconds = all.last ?? 0
        self.acceptedRequests = acceptedRequests.count
        acceptedP50Milliseconds = Self.percentile(acceptedRequests, 0.5)
        acceptedP99Milliseconds = Self.percentile(acceptedRequests, 0.99)
        acceptedP999Milliseconds = Self.percentile(acceptedRequests, 0.999)
        acceptedMaxMilliseconds = acceptedRequests.last ?? 0
        acceptedP99MillisecondsByKind = Dictionary(grouping: outcomes.filter { $0.accepted > 0 }, by: \.kind).mapValues {
            Self.percentile($0.map(\.milliseconds).sorted(), 0.99)
        }
        lateP99Milliseconds = Self.percentile(outcomes.map(\.lateMilliseconds).sorted(), 0.99)
        completeDevices = Self.completeDevices(outcomes)
        let answers = outcomes.compactMap(\.answerMilliseconds).sorted()
        answerP50Milliseconds = Self.percentile(answers, 0.5)
        answerP99Milliseconds = Self.percentile(answers, 0.99)
        acceptedAnswerP99Milliseconds = Self.percentile(
            outcomes.filter { $0.accepted > 0 }.compactMap(\.answerMilliseconds).sorted(), 0.99)
    }

    private static func completeDevices(_ outcomes: [LoadOutcome]) -> Int? {
        guard outcomes.contains(where: { $0.kind != .impression }) else { return nil }
        var kinds: [Int: Set<LoadEventKind>] = [:]
        for outcome in outcomes {
            for device in outcome.acceptedDevices { kinds[device, default: []].insert(outcome.kind) }
        }
        return kinds.values.filter { $0.count == LoadEventKind.allCases.count }.count
    }

    /// The exact percentile of sorted samples (nearest rank; every sample is kept).
    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, max(0, Int((p * Double(sorted.count)).rounded(.up)) - 1))]
    }
}
