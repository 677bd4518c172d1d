import AttributionModel

/// Everything random about a simulation, drawn up front from one seeded generator so `--seed`
/// replays the same devices, ids and choices whatever order the concurrent requests finish in.
/// Times are not part of the plan: they are read from the clock as each request goes out.
struct SimulationPlan: Sendable {
    struct ImpressionSpec: Sendable {
        var network: AdNetworkIdentifier
        var publisher: ItemIdentifier
        var impressionIdentifier: String
        var sourceIdentifier: Int
        var interactionType: InteractionType
        /// Click: how long before the tap the ad was loaded (1–60 s).
        var loadedBeforeMilliseconds: Milliseconds
        /// How long before display the network created the impression (0–5 s).
        var createdBeforeMilliseconds: Milliseconds
    }

    struct DeviceSpec: Sendable {
        var deviceIdentifier: String
        var impressions: [ImpressionSpec]
        /// nil: the device never installs.
        var install: ConversionType?
        var countryCode: String
        /// Sent right after the install: lands in window 0.
        var firstUpdate: PostbackUpdate?
        /// Sent 4 scaled days after the install: lands in window 1 (days 3–7).
        var secondUpdate: PostbackUpdate?
    }

    static let advertisedItem: ItemIdentifier = 1_108_187_390
    static let firstPublisherItem: ItemIdentifier = 5_838_492
    static let countries = ["US", "GB", "DE", "FR", "JP"]

    var networks: [AdNetworkIdentifier]
    var publishers: [ItemIdentifier]
    var devices: [DeviceSpec]

    /// Network k (1-based) is `sim-network-<k>.adattributionkit`; publisher k is 5838492 + k.
    static func make(devices deviceCount: Int, adNetworks: Int, publisherApps: Int, using rng: inout SplitMix64)
        -> SimulationPlan
    {
        let networks = (1...adNetworks).compactMap { AdNetworkIdentifier("sim-network-\($0).adattributionkit") }
        let publishers = (1...publisherApps).map { firstPublisherItem + ItemIdentifier($0) }
        let devices = (0..<deviceCount).map { _ in device(networks: networks, publishers: publishers, using: &rng) }
        return SimulationPlan(networks: networks, publishers: publishers, devices: devices)
    }

    private static func device(
        networks: [AdNetworkIdentifier], publishers: [ItemIdentifier], using rng: inout SplitMix64
    ) -> DeviceSpec {
        let deviceIdentifier = "device-" + RandomUUID.make(using: &rng)
        var impressions = (0..<Int.random(in: 1...4, using: &rng)).map { _ in
            ImpressionSpec(
                network: networks.randomElement(using: &rng)!, publisher: publishers.randomElement(using: &rng)!,
                impressionIdentifier: RandomUUID.make(using: &rng).uppercased(),
                sourceIdentifier: Int.random(in: SourceIdentifier.range, using: &rng),
                interactionType: rng.chance(0.6) ? .click : .view,
                loadedBeforeMilliseconds: Milliseconds.random(in: 1_000...60_000, using: &rng),
                createdBeforeMilliseconds: Milliseconds.random(in: 0...5_000, using: &rng))
        }
        // A network's views of one device are all shown at the same moment here, and the verifier refuses
        // a view while the same network's view is open (`overlapping-view`): a second one becomes a
        // click, so every planned impression is one the pipeline takes and the expected counts hold.
        var viewing: Set<AdNetworkIdentifier> = []
        for index in impressions.indices where impressions[index].interactionType == .view {
            if !viewing.insert(impressions[index].network).inserted { impressions[index].interactionType = .click }
        }
        let installs = rng.chance(0.85)
        let install: ConversionType? = installs ? (rng.chance(0.10) ? .redownload : .download) : nil
        let countryCode = countries.randomElement(using: &rng)!
        let firstUpdate = installs ? update(lockChance: 0.7, using: &rng) : nil
        let secondUpdate = installs && rng.chance(0.5) ? update(lockChance: 0.7, using: &rng) : nil
        return DeviceSpec(
            deviceIdentifier: deviceIdentifier, impressions: impressions, install: install, countryCode: countryCode,
            firstUpdate: firstUpdate, secondUpdate: secondUpdate)
    }

    private static func update(lockChance: Double, using rng: inout SplitMix64) -> PostbackUpdate {
        PostbackUpdate(
            fineConversionValue: Int.random(in: PostbackUpdate.fineRange, using: &rng),
            coarseConversionValue: CoarseConversionValue.allCases.randomElement(using: &rng)!,
            lockPostback: rng.chance(lockChance))
    }
}
