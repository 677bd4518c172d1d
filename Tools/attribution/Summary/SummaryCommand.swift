import ArgumentParser
import AttributionModel
import Foundation

/// `attribution summary`: what a receiver's JSONL file holds, per ad network and window.
struct SummaryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "summary",
        abstract: "Count the postbacks in a receiver's JSONL file per ad network, winning and non-winning, by window.",
        discussion:
            "Columns \"win wN\" and \"non-win wN\" count winning and non-winning postbacks with postback-sequence-index N."
    )

    @Option(help: "The receiver's --output file.")
    var file: String

    @Flag(help: "Print JSON instead of a table.")
    var json = false

    @Option(
        help: """
            A report of `attribution simulate --report`: also print, per window, how many postbacks it \
            expects and how many arrived, and exit 1 unless they are equal.
            """)
    var expected: String?

    func run() throws {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw CommandError("cannot read --file \(file): no readable file there")
        }
        let (payloads, unreadable) = Self.payloads(in: data)
        if !unreadable.isEmpty {
            let shown = unreadable.prefix(10).map(String.init).joined(separator: ", ")
            printError("skipped \(unreadable.count) unreadable line(s) in \(file): \(shown)\(unreadable.count > 10 ? ", …" : "")")
        }
        let tally = try PostbackTally(payloads: payloads)
        if json {
            // One line: made for jq and for tests comparing it with the simulate report.
            print(String(decoding: try JSONCoding.encoder.encode(tally), as: UTF8.self))
        } else {
            print(SummaryTable.render(tally))
        }
        if let expected {
            guard let report = FileManager.default.contents(atPath: expected) else {
                throw CommandError("cannot read --expected \(expected): no readable file there")
            }
            let expectation = try JSONDecoder().decode(SimulationReport.self, from: report)
            let (lines, matches) = expectation.compare(with: tally)
            for line in lines { print(line) }
            guard matches else {
                printError("the postbacks that arrived differ from what the simulation expects")
                throw ExitCode(1)
            }
        }
    }

    /// Payloads with their line numbers, and the numbers of lines that hold none: a line cut short
    /// (a receiver killed mid-write, or a file read while a line is being appended) is skipped, not fatal.
    static func payloads(in data: Data) -> (payloads: [(line: Int, payload: PostbackPayload)], unreadable: [Int]) {
        var payloads: [(line: Int, payload: PostbackPayload)] = []
        var unreadable: [Int] = []
        let lines = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        for (offset, line) in lines.enumerated() where !line.isEmpty {
            if let header = try? JSONCoding.decoder.decode(ReceivedPostbackHeader.self, from: Data(line)) {
                // The advertiser's copies are not the ad network's postbacks (the same receiver may take both).
                if !CopyEndpoint.isCopy(path: header.path) { payloads.append((offset + 1, header.payload)) }
            } else {
                unreadable.append(offset + 1)
            }
        }
        return (payloads, unreadable)
    }
}
