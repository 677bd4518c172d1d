import AttributionModel
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceRuntime
import TestSupport

/// What the pipeline itself recorded about each postback it released: the due time the scheduler set
/// (its random delay after the window's close, lock or superseding conversion) and when it moved into
/// `postbacks`. A scenario judges a postback's timing against these, so that a machine too slow for the
/// scaled clock shows as a pipeline that fell behind, not as a broken rule.
struct PostbackRelease: Sendable {
    let dueAt: Milliseconds
    let releasedAt: Milliseconds

    /// Every postback released into a partition's `postbacks` stream (first releases, not retries), by
    /// postback id. The stream keeps them for `STREAM_RETENTION_HOURS` (real hours), far longer than a run.
    static func read(on connection: RedisConnection) async throws -> [String: PostbackRelease] {
        var releases: [String: PostbackRelease] = [:]
        for stream in StreamNames.postbacks.all(testPartitioning) {
            var after = "-"
            while true {
                let reply = try await connection.send(RedisCommand("XRANGE", stream, after, "+", "COUNT", "1000"))
                let entries = reply.elements.compactMap(StreamPages.Entry.init)
                for entry in entries {
                    guard let bytes = entry.fieldMap["e"]?.bytes, let envelope = try? Envelope.decode(bytes),
                        case .postbackDue(let order) = envelope.body,
                        let released = StreamTrim.EntryID(entry.id).map({ Milliseconds($0.milliseconds) })
                    else { continue }
                    releases[order.payload.postbackIdentifier] = PostbackRelease(dueAt: envelope.time, releasedAt: released)
                }
                guard reply.elements.count == 1000, let last = entries.last else { break }
                after = "(" + last.id
            }
        }
        return releases
    }
}

/// Whether a pipeline kept up with its scaled clock, from what it recorded itself: updates and
/// conversions that reached the scheduler after a window they belong to had closed
/// (`scheduler_late_postbacks_total`), postbacks the scheduler wrote only after they were due (released
/// later than its timer's polling explains), and the runner's waits for the verifier. A scenario that
/// fails in a pipeline that fell behind is played again at a slower scale; one that fails in a pipeline
/// that kept up fails at once.
struct PipelineLateness: Sendable, CustomStringConvertible {
    /// Updates, conversions and redone windows the scheduler counted as late through the pipeline.
    var latePostbacks = 0
    /// The longest a postback was released after its due time, ms (the scheduler's timers poll every
    /// 100 ms, so more means the postback was written when already due).
    var latestRelease: Milliseconds = 0
    /// The longest the runner waited for the verifier before a conversion or update, ms.
    var longestSettle: Milliseconds = 0

    /// A release later than this after its due time means the scheduler wrote it late.
    static let releasePolling: Milliseconds = 250
    /// A wait for the verifier longer than this means it did not keep up.
    static let settleLimit: Milliseconds = 1_000

    var fellBehind: Bool {
        latePostbacks > 0 || latestRelease > Self.releasePolling || longestSettle > Self.settleLimit
    }

    var description: String {
        "\(latePostbacks) updates or conversions late through the pipeline (scheduler_late_postbacks_total), "
            + "postbacks released up to \(latestRelease) ms after their due time, verifier waits up to \(longestSettle) ms; "
            + MachineSpeed.description
    }

    /// The sum of `scheduler_late_postbacks_total` on the scheduler's /metrics.
    static func latePostbacks(metrics: String) -> Int {
        metrics.split(separator: "\n").filter { $0.hasPrefix("scheduler_late_postbacks_total") }.reduce(0) { sum, line in
            sum + (line.split(separator: " ").last.flatMap { Double($0) }.map { Int($0) } ?? 0)
        }
    }
}

/// The machine's speed as the test command measured it (`MACHINE_P256_VERIFY_PER_SECOND`, openssl's
/// ECDSA P-256 verifications per second on one core). Not measured here: `openssl speed` stops on
/// SIGALRM, which a child of the test process may never get (it ran on for 20 minutes when tried).
enum MachineSpeed {
    /// The rate of the machine docs/benchmarks.md records, for comparison.
    static let reference = 23_753

    static let verifiesPerSecond: Int? = ProcessInfo.processInfo.environment["MACHINE_P256_VERIFY_PER_SECOND"].flatMap {
        Int($0)
    }

    static var description: String {
        guard let rate = verifiesPerSecond else {
            return "this machine's speed was not measured (scripts/test.sh measures it with openssl speed)"
        }
        return "this machine verifies \(rate) P-256 signatures/s on one core (openssl speed), the benchmarked one \(reference)"
    }
}
