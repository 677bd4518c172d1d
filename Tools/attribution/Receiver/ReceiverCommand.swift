import ArgumentParser
import Hummingbird
import Logging
import ServiceRuntime
import ToolSupport

/// `attribution receiver`: a reference postback receiver, as an ad network or advertiser runs one.
struct ReceiverCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receiver",
        abstract: "Receive postbacks, verify them against the pipeline's JWKS and append them to a JSONL file.",
        discussion: """
            Routes: POST /postbacks and POST /.well-known/appattribution/report-attribution/ (verified, see --signatures; \
            deduplicated on postback-identifier, first copy appended to --output; invalid ones get 400 \
            with problem JSON), GET /health, GET /stats. Flaky mode for showing retries: --fail-first, \
            --fail-share, --failure, --redirect-to, --delay-ms; GET/POST /control reads or changes it at run time (same keys, e.g. \
            {"fail-share": 1}); GET /attempts lists every attempt with a valid postback and whether it was \
            accepted. Stops on SIGTERM or SIGINT.
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

    @Option(name: .customLong("fail-first"), help: "Fail the first N attempts of every postback (per path), to show retries.")
    var failFirst = 0

    @Option(name: .customLong("fail-share"), help: "Fail this share (0–1) of the other attempts at random.")
    var failShare = 0.0

    @Option(
        help:
            "How to fail: `status` (answer --failure-status), `timeout` (hold the request --hang-seconds, then 504) or `redirect` (answer 307 to --redirect-to)."
    )
    var failure = "status"

    @Option(name: .customLong("failure-status"), help: "Status of a deliberate failure.")
    var failureStatus = 500

    @Option(name: .customLong("hang-seconds"), help: "How long a `timeout` failure holds the request.")
    var hangSeconds = 30.0

    @Option(name: .customLong("redirect-to"), help: "Where a `redirect` failure points (a sender must not follow it).")
    var redirectTo: String?

    @Option(name: .customLong("delay-ms"), help: "Answer every valid postback this many milliseconds late (a slow ad network).")
    var delayMilliseconds = 0

    @Option(
        help: """
            When a postback's signature is checked: `check` (before it is accepted) or `later` (while \
            flaky mode is off, an AdAttributionKit postback whose kid the key set holds is recorded \
            unchecked, for whoever reads --output to verify: the benchmark does, after its ramp, so this \
            receiver's ECDSA work does not compete with the pipeline for the same cores; it accepts forged \
            signatures, so it is for benchmarks only). Other postbacks are checked either way.
            """)
    var signatures: ReceiverIntake.SignatureCheck = .check

    @OptionGroup var logging: LoggingOptions

    var flakySettings: FlakyMode.Settings {
        var settings = FlakyMode.Settings()
        settings.failFirst = failFirst
        settings.failShare = failShare
        settings.failure = FlakyMode.Settings.Failure(rawValue: failure) ?? .status
        settings.failureStatus = failureStatus
        settings.hangSeconds = hangSeconds
        settings.delayMilliseconds = delayMilliseconds
        settings.redirectTo = redirectTo
        return settings
    }

    func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be within 0–65535; not \(port)") }
        try HTTPURLValidation.check(jwksURL, flag: "--jwks-url")
        guard FlakyMode.Settings.Failure(rawValue: failure) != nil else {
            throw ValidationError("--failure must be status, timeout or redirect; not \(failure)")
        }
        if let problem = flakySettings.problem { throw ValidationError(problem) }
    }

    func run() async throws {
        let logger = logging.makeLogger()
        let log = try PostbackLog(path: output, logger: logger)
        // A JWKS host that is down should fail a postback fast (503, the sender retries), not hang it.
        let client = try ToolHTTPClient(connectTimeout: .seconds(2))
        let keys = KeySetCache(url: jwksURL, client: client, logger: logger)
        // Early fetch, beside the server rather than before it, so a wrong --jwks-url shows in the
        // log at startup; not fatal, the pipeline may simply start later.
        async let prefetch = try? keys.refresh()

        let intake = ReceiverIntake(
            log: log, keys: keys, flaky: FlakyMode(settings: flakySettings), collector: nil, logger: logger,
            signatures: signatures)
        let serverName = "attribution-receiver"
        let app = Application(
            router: ReceiverRouter.build(intake),
            // Postbacks are answered by `PostbackFastPath` on the event loops; the rest of the routes are
            // served there too (they only read memory).
            server: EventLoopHTTP1Channel.builder { PostbackFastPath(intake: intake, serverName: serverName) },
            configuration: .init(address: .hostname(host, port: port), serverName: serverName),
            onServerRunning: { [host, output, signatures, seeded = log.seededCount] channel in
                logger.info(
                    "Receiver listening",
                    metadata: [
                        "receiver.host": "\(host)", "receiver.port": "\(channel.localAddress?.port ?? -1)",
                        "receiver.output": "\(output)", "receiver.known_postbacks": "\(seeded)",
                        "receiver.signatures": "\(signatures.rawValue)",
                    ])
            },
            logger: logger
        )
        do {
            try await app.runService()
        } catch {
            _ = await prefetch
            throw error
        }
        _ = await prefetch
    }
}

extension ReceiverIntake.SignatureCheck: ExpressibleByArgument {}
