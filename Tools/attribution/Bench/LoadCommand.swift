import ArgumentParser
import AsyncHTTPClient
import AttributionCrypto
import AttributionModel
import Foundation
import NIOCore

/// `attribution load`: offers signed impressions to ingest at a fixed rate (open loop) and reports the
/// answers' latency percentiles. Latency counts from when a request was due, not when it went out, so
/// a stalled server cannot hide its queueing (no coordinated omission). Every sample is kept, so the
/// percentiles are exact.
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
        var bodies: [ByteBuffer] = []
        bodies.reserveCapacity(total)
        let now = Milliseconds(Date().timeIntervalSince1970 * 1000)
        for index in 0..<total {
            let time = now + Milliseconds(Double(index) / Double(rate) * 1000)
            let payload = ImpressionPayload(
                impressionIdentifier: UUID().uuidString, adNetworkIdentifier: networkID, advertisedItemIdentifier: app,
                publisherItemIdentifier: publisher, sourceIdentifier: index % 10_000, timestamp: time - 1_000)
            let jws = try ImpressionSigning.sign(payload, with: key)
            let body: [String: Any] = [
                "device-identifier": "load-device-\(index % 5_000)", "impression": jws,
                "interaction": ["type": "click", "loaded-at": time - 500, "time": time],
            ]
            bodies.append(ByteBuffer(data: try JSONSerialization.data(withJSONObject: body)))
        }
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: 64)
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let url = "\(ingestURL)/v1/impressions"
        let start = ContinuousClock.now
        let interval = Duration.seconds(1) / rate
        let results = await withTaskGroup(of: (Double, Bool).self) { group in
            for index in 0..<total {
                let due = start + interval * index
                try? await Task.sleep(until: due, clock: .continuous)
                let body = bodies[index]
                group.addTask {
                    var request = HTTPClientRequest(url: url)
                    request.method = .POST
                    request.headers.add(name: "Content-Type", value: "application/json")
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
