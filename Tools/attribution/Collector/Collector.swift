import AttributionCrypto
import AttributionModel
import Foundation
import Logging

/// The measurement partner's side: every postback the receiver verified and saw for the first time
/// (per path and postback id) is decoded with the app's schema, added to the campaign report (written
/// as `report.json` and `report.csv`), and handed to the forwarder for the partner URLs.
actor Collector {
    let schemas: [ItemIdentifier: ConversionValueSchema]
    let reportDirectory: URL
    let forwarder: Forwarder?
    let logger: Logger
    private(set) var report = CollectorReport()
    private var writeScheduled = false

    init(schemas: [ItemIdentifier: ConversionValueSchema], reportDirectory: URL, forwarder: Forwarder?, logger: Logger) throws {
        self.schemas = schemas
        self.reportDirectory = reportDirectory
        self.forwarder = forwarder
        self.logger = logger
        try FileManager.default.createDirectory(at: reportDirectory, withIntermediateDirectories: true)
    }

    /// Reads `--schema-file`: a JSON object of advertised app id → schema (as the admin API returns it).
    static func loadSchemas(_ path: String?) throws -> [ItemIdentifier: ConversionValueSchema] {
        guard let path else { return [:] }
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let byText = try JSONCoding.decoder.decode([String: ConversionValueSchema].self, from: data)
        var schemas: [ItemIdentifier: ConversionValueSchema] = [:]
        for (text, schema) in byText {
            guard let item = ItemIdentifier(text) else { throw CommandError("--schema-file: \(text) is not an app id") }
            if let problem = schema.validationProblems().first { throw CommandError("--schema-file, app \(text): \(problem)") }
            schemas[item] = schema
        }
        return schemas
    }

    func collect(_ postback: VerifiedPostback) async {
        let collected = CollectedPostback(
            kind: postback.kind.rawValue, payload: postback.payload, fine: postback.body.conversionValue,
            coarse: postback.body.coarseConversionValue, countryCode: postback.body.countryCode,
            schema: schemas[postback.payload.advertisedItemIdentifier])
        report.add(collected)
        if let forwarder, let body = try? JSONCoding.encoder.encode(collected) {
            await forwarder.enqueue(body: body, postbackIdentifier: collected.postbackIdentifier)
        }
        scheduleWrite()
    }

    /// Writes the report at most every 200 ms: a burst of postbacks costs one write.
    private func scheduleWrite() {
        guard !writeScheduled else { return }
        writeScheduled = true
        Task {
            try? await Task.sleep(for: .milliseconds(200))
            self.write()
        }
    }

    func write() {
        writeScheduled = false
        do {
            let json = try JSONCoding.encoder.encode(ReportDocument(postbacks: report.postbacks, rows: report.sortedRows))
            try json.write(to: reportDirectory.appendingPathComponent("report.json"), options: .atomic)
            try Data(report.csv().utf8).write(to: reportDirectory.appendingPathComponent("report.csv"), options: .atomic)
        } catch {
            logger.error("Writing the report failed", metadata: ["error": "\(error)"])
        }
    }

    struct ReportDocument: Codable {
        var postbacks: Int
        var rows: [CollectorReport.Row]
    }

    var document: ReportDocument { ReportDocument(postbacks: report.postbacks, rows: report.sortedRows) }
}
