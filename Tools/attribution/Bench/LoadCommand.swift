import ArgumentParser
import AsyncHTTPClient
import AttributionCrypto
import AttributionModel
import Foundation
import NIOCore

/// `attribution load`: offers signed impressions to ingest at a fixed rate (open loop) and reports the
/// answers' latency percentiles. Latency counts from when a request was due, not when it went out, so
/// a stalled server cannot hide its queueing (no coordinated omission). Every sample is kept, so the
/// percentiles are exact. With `--app-key` the offer is a campaign that gives all five services work:
/// per device an impression, then its install, then a value update (a third of the requests each).
struct LoadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "load", abstract: "Offer impressions to ingest at a fixed rate; print latency percentiles as JSON.")

    @Option(name: .customLong("ingest-url")) var ingestURL: String
    @Option(help: "Requests per second offered.") var rate: Int
    @Option(help: "Seconds to offer them for.") var duration: Double
    @Option var network: String
    @Option(name: .customLong("key-file")) var keyFile: String
    @Option var app: ItemIdentifier = 1_108_187_390
    @Option var publisher: ItemIdentifier = 5_838_492
    @Option(name: .customLong("app-key"), help: "The advertised app's key: offer impression, install, update per device.")
    var appKey: String?

    struct Figures: Codable {
        var offeredPerSecond: Int
        var seconds: Double
        var sent: Int
        var accepted: Int
        var failed: Int
        var achievedPerSecond: Double
        var p50Milliseconds: Double
        var p99Milliseconds: Double
        var p999Milliseconds: Double
        var maxMilliseconds: Double
    }

    func run() async throws {
        let key = try SigningKey.load(file: keyFile)
        guard let networkID = AdNetworkIdentifier(network) else { throw ValidationError("--network is not an ad network id") }
        let total = Int(Double(rate) * duration)
        // Signed beforehand: the run measures ingest, not this tool's signing.
        var requests: [(path: String, body: ByteBuffer)] = []
        requests.reserveCapacity(total)
        let now = Milliseconds(Date().timeIntervalSince1970 * 1000)
        let run = UUID().uuidString.prefix(8)
        for index in 0..<total {
            let time = now + Milliseconds(Double(index) / Double(rate) * 1000)
            let step = appKey == nil ? 0 : index % 3
            // Impressions-only runs reuse 5,000 devices; a campaign needs one fresh device per install.
            let device = appKey == nil ? "load-device-\(index % 5_000)" : "load-\(run)-\(index / 3)"
            switch step {
            case 0:
                let payload = ImpressionPayload(
                    impressionIdentifier: UUID().uuidString, adNetworkIdentifier: networkID, advertisedItemIdentifier: app,
                    publisherItemIdentifier: publisher, sourceIdentifier: index % 10_000, timestamp: time - 1_000)
                let body: [String: Any] = [
                    "device-identifier": device, "impression": try ImpressionSigning.sign(payload, with: key),
                    "interaction": ["type": "click", "loaded-at": time - 500, "time": time],
                ]
                requests.append(("/v1/impressions", ByteBuffer(data: try JSONSerialization.data(withJSONObject: body))))
            case 1:
                let body = IngestRequests.Conversion(
                    deviceIdentifier: device, advertisedItemIdentifier: app, conversionType: .download, time: time,
                    countryCode: "US")
                requests.append(("/v1/conversions", ByteBuffer(bytes: try JSONCoding.encoder.encode(body))))
            default:
                let body = IngestRequests.ValueUpdate(
                    deviceIdentifier: device, advertisedItemIdentifier: app, time: time,
                    update: PostbackUpdate(fineConversionValue: index % 64, coarseConversionValue: .medium))
                requests.append(("/v1/conversion-value-updates", ByteBuffer(bytes: try JSONCoding.encoder.encode(body))))
            }
        }
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: 64)
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let start = ContinuousClock.now
        let interval = Duration.seconds(1) / rate
        let results = await withTaskGroup(of: (Double, Bool).self) { group in
            for index in 0..<total {
                let due = start + interval * index
                try? await Task.sleep(until: due, clock: .continuous)
                let (path, body) = requests[index]
                group.addTask {
                    var request = HTTPClientRequest(url: ingestURL + path)
                    request.method = .POST
                    request.headers.add(name: "Content-Type", value: "application/json")
                    if path != "/v1/impressions", let appKey {
                        request.headers.add(name: "Authorization", value: "Bearer \(appKey)")
                    }
                    request.body = .bytes(body)
                    let accepted: Bool
                    do {
                        let response = try await client.execute(request, timeout: .seconds(30))
                        _ = try? await response.body.collect(upTo: 64 * 1024)
                        accepted = response.status.code == 202
                    } catch {
                        accepted = false
                    }
                    let latency = ContinuousClock.now - due
                    return (latency.seconds * 1000, accepted)
                }
            }
            var results: [(Double, Bool)] = []
            for await result in group { results.append(result) }
            return results
        }
        let elapsed = ContinuousClock.now - start
        try await client.shutdown()
        let latencies = results.map(\.0).sorted()
        func percentile(_ p: Double) -> Double {
            latencies.isEmpty ? 0 : latencies[min(latencies.count - 1, Int((p * Double(latencies.count)).rounded(.up)) - 1)]
        }
        let seconds = elapsed.seconds
        let accepted = results.filter(\.1).count
        let figures = Figures(
            offeredPerSecond: rate, seconds: seconds, sent: results.count, accepted: accepted, failed: results.count - accepted,
            achievedPerSecond: Double(accepted) / seconds, p50Milliseconds: percentile(0.5), p99Milliseconds: percentile(0.99),
            p999Milliseconds: percentile(0.999), maxMilliseconds: latencies.last ?? 0)
        print(String(decoding: try JSONCoding.encoder.encode(figures), as: UTF8.self))
    }
}
