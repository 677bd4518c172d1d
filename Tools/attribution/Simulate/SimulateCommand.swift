import ArgumentParser
import AttributionModel
import Foundation
import RedisStreams
import ToolSupport

/// `attribution simulate`: realistic traffic from ad networks, devices and an advertised app,
/// with the postbacks the pipeline should send computed by the model's own winner selection.
struct SimulateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Drive a running pipeline with simulated ad networks, devices, installs and value updates.",
        discussion: """
            Registers sim-network-<k>.adattributionkit (k = 1…N, fresh keys, postbacks to --receiver-url), \
            the advertised app 1108187390 and publisher apps 5838492+k listing every network. Each device \
            reports 1–4 impressions (~60 % clicks), ~85 % install (~10 % of those as redownload) and send a \
            value update; 4 scaled days later ~50 % send a second, window-1 update. The expected postbacks \
            come from the model's WinnerSelection over the impressions sent, assuming the verifier accepts \
            them all (so --time-scale must be the pipeline's): per winning install one window-0 postback, \
            and one in the window its second update landed in (a window without an update sends none), \
            assuming every crowd is at least tier 1 (a tier-0 winner gets no later postback). The same --seed replays the same devices \
            and ids, so rerun against a fresh pipeline (or change the seed): replayed impression ids are \
            rejected.
            """
    )

    @Option(help: "Base URL of ingest, e.g. http://127.0.0.1:8080.")
    var ingestURL: String

    @Option(
        help:
            "Base URL of the admin service, e.g. http://127.0.0.1:8081 (default: the ingest URL's host, port 8081)."
    )
    var adminURL: String?

    @Option(help: "Bearer token of the admin API (or --admin-token-file).")
    var adminToken: String?

    @Option(help: "A file holding the admin token (a trailing newline is ignored), keeping it off the command line.")
    var adminTokenFile: String?

    @Option(help: "Postback URL registered for every simulated network, e.g. http://127.0.0.1:9999/postbacks.")
    var receiverURL: String

    @Option(help: "Number of simulated devices.")
    var devices = 50

    @Option(help: "Number of simulated ad networks.")
    var adNetworks = 3

    @Option(help: "Number of publisher apps.")
    var publisherApps = 3

    @Option(help: "Seed of the random choices (default: random; the report names it).")
    var seed: UInt64?

    @Option(help: "The pipeline's time scale (every duration is divided by it); must match for the expected counts.")
    var timeScale: Double = 1

    @Option(help: "Also write each network's key files here.")
    var keysDir: String?

    @Option(help: "Write the report as JSON to this file.")
    var report: String?

    @Option(help: "Requests in flight at most.")
    var concurrency = 16

    @Option(
        help:
            "Devices per batch request (1–300: impressions, installs and updates go to the …/batch routes); 1 sends each event on its own."
    )
    var batch = 1

    @Option(
        help:
            "Retry requests that failed for no fault of their own (no connection, 5xx, 429) for this many seconds, with one Idempotency-Key each (0: stop at the first failure)."
    )
    var retrySeconds = 0.0

    @Option(help: "Write every event ingest acknowledged to this file, one JSON line each (kind, event-identifier, device).")
    var acknowledgements: String?

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        try HTTPURLValidation.check(ingestURL, flag: "--ingest-url")
        if let adminURL { try HTTPURLValidation.check(adminURL, flag: "--admin-url") }
        try HTTPURLValidation.check(receiverURL, flag: "--receiver-url")
        switch (adminToken, adminTokenFile) {
        case (nil, nil): throw ValidationError("--admin-token or --admin-token-file is required")
        case (.some, .some): throw ValidationError("give --admin-token or --admin-token-file, not both")
        case (.some(let token), nil) where token.isEmpty: throw ValidationError("--admin-token must not be empty")
        default: break
        }
        guard devices >= 1 else { throw ValidationError("--devices must be at least 1; not \(devices)") }
        guard (1...99).contains(adNetworks) else { throw ValidationError("--ad-networks must be within 1–99; not \(adNetworks)") }
        guard (1...99).contains(publisherApps) else {
            throw ValidationError("--publisher-apps must be within 1–99; not \(publisherApps)")
        }
        guard timeScale > 0, timeScale.isFinite else {
            throw ValidationError("--time-scale must be a positive number; not \(timeScale)")
        }
        guard retrySeconds >= 0, retrySeconds.isFinite else {
            throw ValidationError("--retry-seconds must be 0 or more; not \(retrySeconds)")
        }
        guard (1...300).contains(batch) else { throw ValidationError("--batch must be within 1–300; not \(batch)") }
        guard (1...256).contains(concurrency) else {
            throw ValidationError("--concurrency must be within 1–256; not \(concurrency)")
        }
    }

    /// The admin service's default: the ingest URL's scheme and host, port 8081 (admin's default `HTTP_PORT`).
    static func adminURL(besides ingestURL: String) -> String {
        guard var parts = URLComponents(string: ingestURL) else { return ingestURL }
        parts.port = 8081
        parts.path = ""
        return parts.string ?? ingestURL
    }

    /// The admin token, from the option or read from its file.
    func token() throws -> String {
        if let adminToken { return adminToken }
        let file = adminTokenFile ?? ""
        guard let token = RedisConfiguration.password(fromFile: file), !token.isEmpty else {
            throw ValidationError("cannot read an admin token from --admin-token-file \(file)")
        }
        return token
    }

    func run() async throws {
        let logger = logging.makeLogger()
        let adminToken = try token()
        let seed = self.seed ?? UInt64.random(in: 0...UInt64.max)
        var rng = SplitMix64(seed: seed)
        let plan = SimulationPlan.make(devices: devices, adNetworks: adNetworks, publisherApps: publisherApps, using: &rng)

        let http = try ToolHTTPClient()
        let acknowledgementLog = try acknowledgements.map(AcknowledgementLog.init(path:))
        func trimmed(_ url: String) -> String { url.hasSuffix("/") ? String(url.dropLast()) : url }
        var ingest = IngestClient(
            http: http, baseURL: trimmed(ingestURL), adminURL: trimmed(adminURL ?? Self.adminURL(besides: ingestURL)),
            adminToken: adminToken)
        ingest.retryFor = .milliseconds(Int64(retrySeconds * 1000))
        ingest.acknowledgements = acknowledgementLog
        let simulation = Simulation(
            plan: plan,
            ingest: ingest,
            receiverURL: receiverURL, policy: TimePolicy(scale: timeScale), concurrency: concurrency, batch: batch,
            logger: logger)
        let result: SimulationReport
        result = try await Self.play(simulation, seed: seed, keysDirectory: keysDir)
        try await acknowledgementLog?.close()

        if let report {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
            try (encoder.encode(result) + Data("\n".utf8)).write(to: URL(fileURLWithPath: report))
        }
        print(result.summaryLine)
    }

    private static func play(_ simulation: Simulation, seed: UInt64, keysDirectory: String?) async throws
        -> SimulationReport
    {
        let credentials = try await simulation.register(keysDirectory: keysDirectory)
        let outcomes = try await simulation.runDevices(credentials)
        simulation.logger.info("Devices done", metadata: ["simulate.devices": "\(outcomes.count)"])
        let updated = try await simulation.runSecondUpdates(outcomes, credentials)
        let report = SimulationReport(
            seed: seed, timeScale: simulation.policy.scale, networks: simulation.plan.networks, outcomes: updated)
        if report.updates.secondLate > 0 {
            simulation.logger.warning(
                "Second updates missed window 1; lower --time-scale or --devices",
                metadata: ["simulate.late": "\(report.updates.secondLate)"])
        }
        return report
    }
}
