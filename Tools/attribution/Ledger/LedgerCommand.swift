import ArgumentParser
import AttributionModel
import Foundation
import Logging
import PipelineCatalog
import RedisStreams
import ServiceRuntime
import ToolSupport

/// `attribution ledger`: after a run, accounts for every event ingest acknowledged and every postback
/// that fell due, from the pipeline's own streams and the receiver's files. Exits 1 on any event or
/// postback unaccounted, any postback recorded twice, or a device identifier in a received postback.
struct LedgerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ledger",
        abstract: "Account for every acknowledged event and every due postback (the fault run's check).",
        discussion: """
            Reads `events`, `verified`, `rejected`, `attributions`, `postbacks`, every dead-letter stream and \
            the device states of updates still waiting, plus the files of `attribution simulate \
            --acknowledgements` and `attribution receiver --output`. Run it once the pipeline is idle: \
            anything still in a stream or delayed queue is reported as in flight, which fails the check.
            """)

    @OptionGroup var redis: RedisOptions

    @Option(help: "The acknowledged events (JSON lines from `attribution simulate --acknowledgements`).")
    var acknowledgements: String

    @Option(help: "A receiver's JSONL output (repeat for several receivers).")
    var received: [String] = []

    @Option(help: "The pipeline's time scale (window ends are scaled by it).")
    var timeScale: Double = 1

    @Flag(help: "Print the report as JSON.")
    var json = false

    @Option(
        help: """
            First wait up to this many seconds for the pipeline to be idle: nothing unread, pending or \
            delayed in three readings a second apart (0: account at once).
            """)
    var waitIdle = 0.0

    func validate() throws {
        guard waitIdle >= 0, waitIdle.isFinite else { throw ValidationError("--wait-idle must be 0 or more; not \(waitIdle)") }
    }

    func run() async throws {
        let acknowledged = try Self.lines(acknowledgements).map {
            try JSONCoding.decoder.decode(Ledger.Acknowledged.self, from: Data($0.utf8))
        }
        let connection = try redis.connect(label: "ledger")
        let partitioning = try await PartitionRecord.read(on: connection)
        if waitIdle > 0, !(try await Self.waitUntilIdle(on: connection, partitioning, seconds: waitIdle)) {
            printError("the pipeline was not idle within \(waitIdle) s: what is in flight is reported")
        }
        var records = try await LedgerReader(connection: connection, partitioning: partitioning).read(acknowledged: acknowledged)
        await connection.close()
        try readReceived(into: &records, devices: Set(acknowledged.map(\.device)))
        let report = Ledger(acknowledged: acknowledged, records: records, policy: TimePolicy(scale: timeScale)).account()
        if json {
            print(String(decoding: try JSONCoding.encoder.encode(report), as: UTF8.self))
        } else {
            print(Self.render(report))
        }
        if !report.violations.isEmpty { throw ExitCode(1) }
    }

    /// Delivered postback ids, and any acknowledged device identifier found among the received bytes.
    private func readReceived(into records: inout Ledger.Records, devices: Set<String>) throws {
        for file in received {
            for line in try Self.lines(file) {
                let received = try JSONCoding.decoder.decode(ReceivedPostbackHeader.self, from: Data(line.utf8))
                // The advertiser's copy of a winning postback carries its id too: not a second delivery to
                // the ad network (a receiver standing in for both records each).
                if !CopyEndpoint.isCopy(path: received.path) {
                    records.delivered[received.payload.postbackIdentifier, default: 0] += 1
                }
                // Every token that could be an identifier, against the devices the campaign used.
                let tokens = line.split { !($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == ".") }
                for token in tokens where devices.contains(String(token)) { records.devicesInPostbacks.insert(String(token)) }
            }
        }
    }

    /// True once three snapshots a second apart find nothing unread, pending or delayed; false at the deadline.
    static func waitUntilIdle(on connection: RedisConnection, _ partitioning: Partitioning, seconds: Double) async throws -> Bool
    {
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        var quiet = 0
        while ContinuousClock.now < deadline {
            let snapshot = try await PipelineSnapshot.read(on: connection, partitioning, at: WallClock.nowMilliseconds())
            quiet = snapshot.isIdle ? quiet + 1 : 0
            if quiet == 3 { return true }
            try await Task.sleep(for: .seconds(1))
        }
        return false
    }

    static func lines(_ path: String) throws -> [String] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
    }

    static func render(_ report: Ledger.Report) -> String {
        var lines = ["events acknowledged by ingest, by outcome:"]
        for (kind, events) in report.events.sorted(by: { $0.key < $1.key }) {
            lines.append("  \(kind): \(events.acknowledged)")
            for (outcome, count) in events.outcomes.sorted(by: { $0.key < $1.key }) {
                lines.append("    \(outcome): \(count)")
            }
        }
        let p = report.postbacks
        lines += [
            "postbacks due: \(p.due)",
            "  delivered (once after deduplication): \(p.delivered)",
            "  dead-lettered: \(p.deadLettered)",
            "  unaccounted: \(p.unaccounted)",
            "  delivered but never due: \(p.deliveredNotDue)",
            "  first window, winning: \(p.firstWindowWinning) (attributions call for \(p.expectedFirstWindowWinning))",
            "  first window, non-winning: \(p.firstWindowNonWinning) (attributions call for \(p.expectedFirstWindowNonWinning))",
            "in flight: \(report.inFlight.isEmpty ? "nothing" : report.inFlight.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))",
        ]
        lines.append(report.violations.isEmpty ? "LEDGER OK: every event and postback accounted for" : "LEDGER FAILED:")
        lines += report.violations.map { "  - \($0)" }
        return lines.joined(separator: "\n")
    }
}
