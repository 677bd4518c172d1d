import ArgumentParser
import AttributionCrypto
import AttributionModel
import Foundation
import Logging
import PipelineCatalog
import RedisStreams
import ServiceRuntime
import ToolSupport

/// `attribution-bench preload`: puts a stage's input straight onto its stream, as fast as pipelining
/// allows, so a benchmark can time the stage alone: signed impressions with an install per device
/// (`events`: verifier, then attribution-winner), or due postbacks (`postbacks`: dispatcher).
struct PreloadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "preload", abstract: "Preload a stage's input stream for a benchmark (scripts/bench.py).")

    /// `held`: postbacks in the scheduler's first-window held queue, all due 2 s from now.
    enum Kind: String, ExpressibleByArgument, CaseIterable { case impressions, postbacks, held }

    @OptionGroup var redis: RedisOptions
    @Option(
        help: """
            What to load: impressions (signed, with an install every --install-every, on `events`), postbacks \
            (due, on `postbacks`) or held (in the first window's held queue, due 2 s from now).
            """)
    var kind: Kind
    @Option(help: "How many of them.") var count: Int
    @Option(help: "Ad network id (registered, with --key-file's public key).") var network: String
    @Option(name: .customLong("key-file"), help: "The network's private key (PEM), for impressions.") var keyFile: String?
    @Option(help: "The advertised app (registered).") var app: ItemIdentifier = 1_108_187_390
    @Option(help: "The publisher app the impressions name (registered, listing --network).")
    var publisher: ItemIdentifier = 5_838_492
    @Option(help: "One install per this many impressions (impressions only; 0: none).") var installEvery = 4

    func run() async throws {
        let connection = try redis.connect(label: "bench")
        let now = Milliseconds(Date().timeIntervalSince1970 * 1000)
        let partitioning = try await PartitionRecord.read(on: connection)
        var generator = SystemRandomNumberGenerator()
        guard let networkID = AdNetworkIdentifier(network) else { throw ValidationError("--network is not an ad network id") }
        let key = try keyFile.map { try SigningKey.load(file: $0) }
        var written = 0
        var batch: [RedisCommand] = []
        func flush() async throws {
            guard !batch.isEmpty else { return }
            _ = try await connection.pipeline(batch)
            batch.removeAll(keepingCapacity: true)
        }
        for index in 0..<count {
            switch kind {
            case .impressions:
                guard let key else { throw ValidationError("--key-file is needed for impressions") }
                let device = "bench-device-\(index / max(1, installEvery))"
                let time = now - 60_000 + Milliseconds(index % 50_000)
                let payload = ImpressionPayload(
                    impressionIdentifier: UUID().uuidString, adNetworkIdentifier: networkID, advertisedItemIdentifier: app,
                    publisherItemIdentifier: publisher, sourceIdentifier: Int.random(in: 0...9_999, using: &generator),
                    timestamp: time - 1_000)
                let jws = try ImpressionSigning.sign(payload, with: key)
                let report = ImpressionReport(
                    deviceIdentifier: device, impression: jws, interaction: .click(at: time, loadedAt: time - 500),
                    receivedAt: now)
                let partition = partitioning.of(device: device)
                batch.append(
                    StreamCommands.add(
                        StreamNames.events(partition),
                        message: try Envelope(time: time, body: .impressionReported(report)).encoded())
                )
                if installEvery > 0, index % installEvery == installEvery - 1 {
                    let install = ConversionReport(
                        deviceIdentifier: device, advertisedItemIdentifier: app, conversionType: .download, time: now,
                        countryCode: "US", receivedAt: now)
                    batch.append(
                        StreamCommands.add(
                            StreamNames.events(partition),
                            message: try Envelope(time: now, body: .conversionReported(install)).encoded()))
                }
            case .postbacks, .held:
                let order = PostbackOrder(
                    payload: PostbackPayload(
                        adNetworkIdentifier: networkID, sourceIdentifier: "39", advertisedItemIdentifier: app,
                        publisherItemIdentifier: nil, conversionType: .download,
                        marketplaceIdentifier: PostbackPayload.appStoreMarketplace,
                        postbackIdentifier: RandomUUID.make(using: &generator),
                        postbackSequenceIndex: 0, didWin: true),
                    adInteractionType: .click, conversionValue: nil, coarseConversionValue: .high, countryCode: nil,
                    isDevelopment: false)
                // Spread over the partitions as devices would spread them.
                let partition = partitioning[index % partitioning.count]
                if kind == .held {
                    let due = now + 2_000
                    batch += DelayedQueues.heldPostbacks[0](partition).schedule(
                        id: "", dueAtMilliseconds: due, message: CompactHeldPostback.encode(order, dueAt: due))
                } else {
                    batch.append(
                        StreamCommands.add(
                            StreamNames.postbacks(partition),
                            message: try Envelope(id: order.payload.postbackIdentifier, time: now, body: .postbackDue(order))
                                .encoded()))
                }
            }
            written += 1
            if batch.count >= 1_000 { try await flush() }
        }
        try await flush()
        await connection.close()
        print("{\"written\": \(written), \"loaded-at\": \(now)}")
    }
}
