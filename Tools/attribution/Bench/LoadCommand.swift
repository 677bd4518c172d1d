import ArgumentParser
import AsyncHTTPClient
import AttributionCrypto
import AttributionModel
import Foundation
import NIOCore
import NIOHTTP1

/// `attribution load`: offers signed impressions to ingest at a fixed rate of events (open loop) and
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
            over every request (p50Milliseconds …) and over the accepted ones (acceptedP50Milliseconds …).
            """)

    @Option(help: "HTTP connections at most (requests beyond them wait for one, and that wait counts in their latency).")
    var connections = 512

    @Option(name: .customLong("ingest-url")) var ingestURL: String
    @Option(help: "Events per second offered (requests per second: rate / batch).") var rate: Int
    @Option(help: "Seconds to offer them for.") var duration: Double
    @Option var network: String
    @Option(name: .customLong("key-file")) var keyFile: String
    @Option var app: ItemIdentifier = 1_108_187_390
    @Option var publisher: ItemIdentifier = 5_838_492
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

        var configuration = HTTPClient.Configuration()
        // Open loop: like many ad servers, not one with a few sockets, so a request never waits here
        // for a connection while ingest has room (that wait would be the tool's queue, not ingest's).
        configuration.connectionPool = .init(
            idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: connections)
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let timeout = TimeAmount.milliseconds(Int64(self.timeout * 1000))
        let start = ContinuousClock.now
        // EventLoopFuture requests, not a task per request: the tool then costs a fraction of what it
        // measures, so past capacity it is ingest that falls behind, not the tool (whose own lag each
        // outcome still reports, as `late`).
        var answers: [EventLoopFuture<LoadOutcome>] = []
        answers.reserveCapacity(requests.count)
        var next = 0
        while next < requests.count {
            // Due when its first event is: `rate` events per second, whatever the batch size.
            let due = start + .seconds(Double(requests[next].firstEvent) / Double(rate))
            if ContinuousClock.now < due { try? await Task.sleep(until: due, clock: .continuous) }
            let now = ContinuousClock.now
            // Everything due by now goes out together: one wake-up per batch of due requests.
            while next < requests.count {
                let due = start + .seconds(Double(requests[next].firstEvent) / Double(rate))
                guard due <= now else { break }
                answers.append(send(requests[next], due: due, late: (now - due).seconds * 1000, client: client, timeout: timeout))
                next += 1
            }
        }
        let outcomes = try await EventLoopFuture.whenAllSucceed(answers, on: client.eventLoopGroup.next()).get()
        let elapsed = ContinuousClock.now - start
        try await client.shutdown()
        let figures = LoadFigures(
            rate: rate, batch: batch, seconds: elapsed.seconds, signingSeconds: signingSeconds, outcomes: outcomes)
        print(String(decoding: try JSONCoding.encoder.encode(figures), as: UTF8.self))
    }

    /// One request; its outcome, never a failure (no answer is an outcome too).
    private func send(
        _ request: LoadRequest, due: ContinuousClock.Instant, late: Double, client: HTTPClient, timeout: TimeAmount
    ) -> EventLoopFuture<LoadOutcome> {
        var headers = HTTPHeaders([("Content-Type", "application/json")])
        if request.kind.needsAppKey, let appKey { headers.add(name: "Authorization", value: "Bearer \(appKey)") }
        let answer: EventLoopFuture<HTTPClient.Response>
        do {
            let http = try HTTPClient.Request(
                url: ingestURL + request.path, method: .POST, headers: headers, body: .byteBuffer(request.body))
            answer = client.execute(request: http, deadline: .now() + timeout)
        } catch {
            answer = client.eventLoopGroup.next().makeFailedFuture(error)
        }
        return answer.map { response in
            var outcome = LoadOutcome(
                kind: request.kind, milliseconds: (ContinuousClock.now - due).seconds * 1000, events: request.events,
                batch: request.batch, status: Int(response.status.code), body: response.body)
            outcome.lateMilliseconds = late
            return outcome
        }.recover { error in
            var outcome = LoadOutcome(
                kind: request.kind, milliseconds: (ContinuousClock.now - due).seconds * 1000, events: request.events)
            outcome.failed = request.events
            outcome.lateMilliseconds = late
            outcome.timedOut = (error as? HTTPClientError) == .deadlineExceeded
            outcome.refusals[outcome.timedOut ? "timeout" : "no answer", default: 0] += request.events
            return outcome
        }
    }
}
