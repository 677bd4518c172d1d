import ArgumentParser
import AsyncHTTPClient
import Hummingbird
import Logging

/// `attribution receiver`: a reference postback receiver, as an ad network or advertiser runs one.
struct ReceiverCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receiver",
        abstract: "Receive postbacks, verify them against the pipeline's JWKS and append them to a JSONL file.",
        discussion: """
            Routes: POST /postbacks and POST /.well-known/appattribution/report-attribution/ (verified, \
            deduplicated on postback-identifier, first copy appended to --output; invalid ones get 400 \
            with problem JSON), GET /health, GET /stats. Stops on SIGTERM or SIGINT.
            """
    )

    @Option(help: "Port to listen on (0 picks a free one; the startup log line names it).")
    var port: Int

    @Option(help: "Address to bind.")
    var host = "127.0.0.1"

    @Option(name: .customLong("jwks-url"), help: "The pipeline's key set, e.g. http://127.0.0.1:8080/.well-known/jwks.json.")
    var jwksURL: String

    @Option(help: "JSONL file the accepted postbacks are appended to (created if missing).")
    var output: String

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be within 0–65535; not \(port)") }
        try HTTPURLValidation.check(jwksURL, flag: "--jwks-url")
    }

    func run() async throws {
        let logger = logging.makeLogger()
        let log = try PostbackLog(path: output, logger: logger)
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        let keys = KeySetCache(url: jwksURL, client: client, logger: logger)
        // Early fetch so a wrong --jwks-url shows at startup; not fatal, the pipeline may start later.
        _ = try? await keys.refresh()

        let app = Application(
            router: ReceiverRouter.build(log: log, keys: keys, logger: logger),
            configuration: .init(address: .hostname(host, port: port), serverName: "attribution-receiver"),
            onServerRunning: { [host, output, seeded = log.seededCount] channel in
                logger.info(
                    "Receiver listening",
                    metadata: [
                        "receiver.host": "\(host)", "receiver.port": "\(channel.localAddress?.port ?? -1)",
                        "receiver.output": "\(output)", "receiver.known_postbacks": "\(seeded)",
                    ])
            },
            logger: logger
        )
        do {
            try await app.runService()
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }
}
