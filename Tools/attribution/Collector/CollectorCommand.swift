import ArgumentParser
import AttributionModel
import Foundation
import Hummingbird
import Logging
import ToolSupport

/// `attribution collector`: the reference receiver grown up, for an ad network or measurement partner.
struct CollectorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "collector",
        abstract: "Receive and verify postbacks, decode their values with the apps' schemas, report, and forward.",
        discussion: """
            Everything `receiver` does (verification of AdAttributionKit and SKAdNetwork postbacks against \
            the JWKS, deduplication per path and postback-identifier / transaction-id, JSONL output; flaky \
            mode only through POST /control, not its command-line options), plus: each new postback's fine or coarse value is decoded with --schema-file (app id → \
            schema, as GET /v1/admin/advertised-apps/{item}/conversion-value-schema returns it) into the \
            activity ranges it stands for; the report groups postbacks by ad network, source identifier (at \
            the digits received), window, tier and conversion type and is written to --report-dir as \
            report.json and report.csv (also GET /report and /report.csv); each decoded postback is POSTed \
            to every --forward-url with the dispatcher's retry schedule (9 retries within 9 days, scaled by \
            --time-scale), pending ones kept in forward-pending.json, abandoned ones in forward-dead.jsonl.
            """
    )

    @Option(help: "Port to listen on.")
    var port: Int

    @Option(help: "Address to bind.")
    var host = "127.0.0.1"

    @Option(name: .customLong("jwks-url"), help: "The pipeline's key set.")
    var jwksURL: String

    @Option(help: "JSONL file the accepted postbacks are appended to.")
    var output: String

    @Option(name: .customLong("schema-file"), help: "JSON object: advertised app id → conversion-value schema.")
    var schemaFile: String?

    @Option(name: .customLong("report-dir"), help: "Where report.json, report.csv and the forwarding files go.")
    var reportDirectory: String

    @Option(name: .customLong("forward-url"), help: "A partner URL each decoded postback is POSTed to (repeatable).")
    var forwardURLs: [String] = []

    @Option(name: .customLong("time-scale"), help: "Divides the forwarding retry intervals (as TIME_SCALE does).")
    var timeScale = 1.0

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be within 0–65535; not \(port)") }
        try HTTPURLValidation.check(jwksURL, flag: "--jwks-url")
        for url in forwardURLs { try HTTPURLValidation.check(url, flag: "--forward-url") }
        guard timeScale > 0, timeScale.isFinite else { throw ValidationError("--time-scale must be a positive number") }
    }

    func run() async throws {
        let logger = logging.makeLogger()
        let schemas = try Collector.loadSchemas(schemaFile)
        let log = try PostbackLog(path: output, logger: logger)
        let client = try ToolHTTPClient(connectTimeout: .seconds(2))
        let keys = KeySetCache(url: jwksURL, client: client, logger: logger)
        let directory = URL(fileURLWithPath: reportDirectory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let forwarder =
            forwardURLs.isEmpty
            ? nil
            : Forwarder(
                urls: forwardURLs, client: client, policy: TimePolicy(scale: timeScale), directory: directory, logger: logger)
        let collector = try Collector(schemas: schemas, reportDirectory: directory, forwarder: forwarder, logger: logger)
        let forwarding = Task { await forwarder?.run() }
        let app = Application(
            router: ReceiverRouter.build(log: log, keys: keys, collector: collector, logger: logger),
            configuration: .init(address: .hostname(host, port: port), serverName: "attribution-collector"),
            onServerRunning: { [host, schemas] channel in
                logger.info(
                    "Collector listening",
                    metadata: [
                        "collector.host": "\(host)", "collector.port": "\(channel.localAddress?.port ?? -1)",
                        "collector.schemas": "\(schemas.keys.sorted())",
                    ])
            },
            logger: logger)
        do {
            try await app.runService()
        } catch {
            forwarding.cancel()
            throw error
        }
        forwarding.cancel()
        await collector.write()
    }
}
