import ArgumentParser
import AttributionCrypto
import AttributionModel
import Foundation
import NIOCore
import NIOPosix

/// `attribution-bench load`: offers signed impressions to ingest at a fixed rate of events (open loop) and
/// reports what became of them and the answers' latency percentiles. Latency counts from when a request
/// was due, not when it went out, so a stalled server cannot hide its queueing (no coordinated
/// omission). Every sample is kept, so the percentiles are exact. With `--app-key` the offer is a
/// campaign that gives all five services work: per device an impression, then its install, then a value
/// update (a third of the events each). With `--batch N` the events go N to a request to the batch routes.
struct LoadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "load",
        abstract: "Offer impressions (or a campaign) to ingest at a fixed rate; print the outcome and latency as JSON.",
        discussion: """
            The last line of output is JSON. Counts are events: accepted (answered 202, or a batch item's \
            202), shed (refused at once under overload, a whole request or a batch item: 429, or 503 \
            overloaded or pipeline-lagging), failed (everything else: no answer within --timeout, other \
            5xx, batch items refused for their content). Latency percentiles are per request, counted from when the request was due: \
            over every request (p50Milliseconds …) and over the accepted ones (acceptedP50Milliseconds …); \
            answerP50Milliseconds and answerP99Milliseconds count from a request's write to its answer, without the wait for \
            a connection. sendingCPUSeconds is this tool's CPU while sending (signing excluded). For a campaign, \
            completeDevices counts the devices whose impression, install and value update were all accepted: the \
            installs due a first-window postback.
            """)

    // 128, not more: one request in flight per connection, so connections beyond rate × answer time only
    // move the queue from this tool into ingest's sockets, where its admission cannot see it until it
    // reads them. Probes at 2× the single-event capacity: accepted p99 12–23 ms with 128, 30–68 with
    // 256, 59–92 with 512 (docs/operating/capacity.md).
    @Option(
        help: """
            HTTP connections at most (requests beyond them wait for one, and that wait counts in their latency). \
            One request is in flight per connection: 128 carry about 40,000 requests/s at 3 ms each.
            """)
    var connections = 128

    @Option(name: .customLong("ingest-url"), help: "ingest's public listener, e.g. http://127.0.0.1:8080.")
    var ingestURL: String
    @Option(help: "Events per second offered (requests per second: rate / batch).") var rate: Int
    @Option(help: "Seconds to offer them for.") var duration: Double
    @Option(help: "The ad network whose key signs the impressions (registered).") var network: String
    @Option(name: .customLong("key-file"), help: "That network's private key (PEM).") var keyFile: String
    @Option(help: "The advertised app (registered).") var app: ItemIdentifier = 1_108_187_390
    @Option(help: "The publisher app the impressions name (registered, listing --network).")
    var publisher: ItemIdentifier = 5_838_492
    @Option(name: .customLong("app-key"), help: "The advertised app's key: offer impression, install, update per device.")
    var appKey: String?
    @Option(help: "Events per request: 1 uses the single-event routes; more (up to 1000) the batch routes, one kind per batch.")
    var batch: Int = 1
    @Option(
        help: """
            Seconds a request may take, waiting for a connection included, before it counts as failed \
            (timedOut): a collapsed server cannot stall the run for longer.
            """)
    var timeout: Double = 10

    func validate() throws {
        guard rate > 0, duration > 0 else { throw ValidationError("--rate and --duration must be positive") }
        guard (1...1_000).contains(batch) else { throw ValidationError("--batch must be between 1 and 1000") }
        guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
        // None would leave every request waiting for a connection never opened.
        guard connections > 0 else { throw ValidationError("--connections must be positive") }
    }

    func run() async throws {
        guard let networkID = AdNetworkIdentifier(network) else { throw ValidationError("--network is not an ad network id") }
        let plan = LoadPlan(
            network: networkID, key: try SigningKey.load(file: keyFile), app: app, publisher: publisher,
            campaign: appKey != nil, rate: rate, batch: batch)
        // Signed beforehand: the run measures ingest, not this tool's signing.
        let signingStarted = ContinuousClock.now
        let requests = try await plan.requests(total: Int(Double(rate) * duration))
        let signingSeconds = (ContinuousClock.now - signingStarted).seconds

        guard let url = URL(string: ingestURL), url.scheme == "http", let host = url.host else {
            throw ValidationError("--ingest-url must be an http:// URL")
        }
        let sender = LoadSender(
            loop: MultiThreadedEventLoopGroup.singleton.next(), host: host, port: url.port ?? 80, requests: requests,
            appKey: appKey, rate: rate, maxConnections: connections,
            timeout: .milliseconds(Int64(timeout * 1000)))
        let start = ContinuousClock.now
        let cpuBefore = Self.processCPUSeconds()
        let outcomes = try await sender.run()
        let elapsed = ContinuousClock.now - start
        var figures = LoadFigures(
            rate: rate, batch: batch, seconds: elapsed.seconds, signingSeconds: signingSeconds, outcomes: outcomes)
        figures.sendingCPUSeconds = Self.processCPUSeconds() - cpuBefore
        print(String(decoding: try JSONCoding.encoder.encode(figures), as: UTF8.self))
    }

    /// This process's CPU time so far (user and system), so a run can say what sending cost the tool.
    private static func processCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}
