import AttributionCrypto
import AttributionModel
import CryptoPrimitives
import Logging
import ServiceRuntime
import ToolSupport

/// Plays a plan against a running pipeline: registrations, then each device's impressions,
/// install and first update, then the second-window updates 4 scaled days after each install.
struct Simulation: Sendable {
    let plan: SimulationPlan
    let ingest: IngestClient
    let receiverURL: String
    let policy: TimePolicy
    let concurrency: Int
    /// Devices per batch request in phase 1; 1 sends every event on its own.
    var batch = 1
    let logger: Logger

    /// What the simulated parties sign and authenticate with.
    struct Credentials: Sendable {
        var networkKeys: [AdNetworkIdentifier: P256.Signing.PrivateKey]
        /// The advertised app's key for conversions and updates.
        var appKey: String
    }

    /// Registers the networks (fresh keys), the advertised app (and issues its app key) and the
    /// publisher apps.
    func register(keysDirectory: String?) async throws -> Credentials {
        var keys: [AdNetworkIdentifier: P256.Signing.PrivateKey] = [:]
        for network in plan.networks {
            let key = SigningKey.generate()
            keys[network] = key
            if let keysDirectory {
                // Fresh keys every run: replacing the previous run's files is intended.
                try KeyFiles.write(key, name: network.rawValue, directory: keysDirectory, overwrite: true)
            }
            try await ingest.put(
                "/v1/admin/ad-networks/\(network.rawValue)",
                IngestRequests.AdNetwork(
                    publicKey: JWK(publicKey: key.publicKey, keyID: network.rawValue).jsonString,
                    postbackURL: receiverURL))
        }
        try await ingest.put("/v1/admin/advertised-apps/\(SimulationPlan.advertisedItem)", IngestRequests.AdvertisedApp())
        let appKey = try await ingest.issueAppKey(for: SimulationPlan.advertisedItem)
        let listed = IngestRequests.PublisherApp(adNetworkIdentifiers: plan.networks.map(\.rawValue))
        for publisher in plan.publishers {
            try await ingest.put("/v1/admin/publisher-apps/\(publisher)", listed)
        }
        logger.info(
            "Registered",
            metadata: ["simulate.ad_networks": "\(plan.networks.count)", "simulate.publisher_apps": "\(plan.publishers.count)"])
        return Credentials(networkKeys: keys, appKey: appKey)
    }

    /// Phase 1, devices in parallel (each device's own requests in order: impressions before the
    /// install, so the install finds them). With `batch` > 1, that many devices at a time share one
    /// impressions batch, then one conversions batch, then one updates batch.
    func runDevices(_ credentials: Credentials) async throws -> [DeviceOutcome] {
        guard batch > 1 else {
            return try await concurrentMap(plan.devices, limit: concurrency) { device in
                try await self.send(self.requests(for: device, credentials), appKey: credentials.appKey)
            }
        }
        let groups = stride(from: 0, to: plan.devices.count, by: batch).map {
            Array(plan.devices[$0..<min($0 + batch, plan.devices.count)])
        }
        return try await concurrentMap(groups, limit: concurrency) { group in
            try await self.sendBatches(group.map { try self.requests(for: $0, credentials) }, appKey: credentials.appKey)
        }.flatMap { $0 }
    }

    /// One device's phase-1 requests, timed now, and what the pipeline should make of them.
    struct DeviceRequests: Sendable {
        var outcome: DeviceOutcome
        var impressions: [IngestRequests.Impression] = []
        var conversion: IngestRequests.Conversion?
        var update: IngestRequests.ValueUpdate?
    }

    private func requests(for device: SimulationPlan.DeviceSpec, _ credentials: Credentials) throws -> DeviceRequests {
        var requests = DeviceRequests(outcome: DeviceOutcome(device: device, impressions: []))
        for spec in device.impressions {
            let now = WallClock.nowMilliseconds()
            let interaction: Interaction
            switch spec.interactionType {
            case .click: interaction = .click(at: now, loadedAt: now - spec.loadedBeforeMilliseconds)
            case .view: interaction = .view(begin: now - 3_000, end: now)
            }
            let shown = interaction.loadedAt ?? interaction.begin ?? now
            // Realistically the impression predates its display; but under a large time scale the
            // scaled 30-day freshness limit can be seconds, so never older than half of it.
            let created = max(shown - spec.createdBeforeMilliseconds, now - policy.milliseconds(ImpressionRules.maximumAge) / 2)
            let payload = ImpressionPayload(
                impressionIdentifier: spec.impressionIdentifier, adNetworkIdentifier: spec.network,
                advertisedItemIdentifier: SimulationPlan.advertisedItem, publisherItemIdentifier: spec.publisher,
                sourceIdentifier: spec.sourceIdentifier, timestamp: created)
            guard let key = credentials.networkKeys[spec.network] else { preconditionFailure("every planned network has a key") }
            requests.impressions.append(
                IngestRequests.Impression(
                    deviceIdentifier: device.deviceIdentifier, impression: try ImpressionSigning.sign(payload, with: key),
                    interaction: interaction))
            requests.outcome.impressions.append(
                VerifiedImpression(
                    deviceIdentifier: device.deviceIdentifier, payload: payload, interaction: interaction,
                    kind: .adAttributionKit))
        }
        guard let conversionType = device.install else { return requests }
        // Just after the impressions' times: they are sent first, and the install must find them.
        let conversionTime = WallClock.nowMilliseconds() + 1
        requests.conversion = IngestRequests.Conversion(
            deviceIdentifier: device.deviceIdentifier, advertisedItemIdentifier: SimulationPlan.advertisedItem,
            conversionType: conversionType, time: conversionTime, countryCode: device.countryCode)
        requests.outcome.conversionTime = conversionTime
        requests.outcome.attribution = WinnerSelection.select(
            from: requests.outcome.impressions, conversionType: conversionType, time: conversionTime,
            app: AdvertisedAppConfiguration(itemIdentifier: SimulationPlan.advertisedItem), policy: policy)
        if let update = device.firstUpdate {
            requests.update = IngestRequests.ValueUpdate(
                deviceIdentifier: device.deviceIdentifier, advertisedItemIdentifier: SimulationPlan.advertisedItem,
                time: conversionTime + 1, update: update)
            requests.outcome.updatesSent = 1
        }
        return requests
    }

    /// One device's requests, one at a time, in order.
    private func send(_ requests: DeviceRequests, appKey: String) async throws -> DeviceOutcome {
        let device = requests.outcome.device.deviceIdentifier
        for impression in requests.impressions { try await ingest.post("/v1/impressions", impression, device: device) }
        if let conversion = requests.conversion {
            try await ingest.post("/v1/conversions", conversion, appKey: appKey, device: device)
        }
        if let update = requests.update {
            try await ingest.post("/v1/conversion-value-updates", update, appKey: appKey, device: device)
        }
        return requests.outcome
    }

    /// Several devices' requests as three batches, in the same order per device.
    private func sendBatches(_ group: [DeviceRequests], appKey: String) async throws -> [DeviceOutcome] {
        func devices(_ count: (DeviceRequests) -> Int) -> [String] {
            group.flatMap { Array(repeating: $0.outcome.device.deviceIdentifier, count: count($0)) }
        }
        try await ingest.postBatch(
            "/v1/impressions/batch", group.flatMap(\.impressions), devices: devices { $0.impressions.count })
        try await ingest.postBatch(
            "/v1/conversions/batch", group.flatMap(\.conversions), appKey: appKey, devices: devices { $0.conversions.count })
        try await ingest.postBatch(
            "/v1/conversion-value-updates/batch", group.flatMap(\.updates), appKey: appKey,
            devices: devices { $0.updates.count })
        return group.map(\.outcome)
    }

    /// Phase 2: each second update 4 scaled days after its own install (window 1 is days 3–7).
    /// Returns the outcomes with the window each second update landed in (the run may fall behind).
    func runSecondUpdates(_ outcomes: [DeviceOutcome], _ credentials: Credentials) async throws -> [DeviceOutcome] {
        let due = outcomes.indices.compactMap { index -> (Int, PostbackUpdate, Milliseconds)? in
            guard let update = outcomes[index].device.secondUpdate, let time = outcomes[index].conversionTime else {
                return nil
            }
            return (index, update, time + policy.milliseconds(.days(4)))
        }.sorted { $0.2 < $1.2 }
        guard let last = due.last else { return outcomes }
        logger.info(
            "Waiting for window 1",
            metadata: [
                "simulate.updates": "\(due.count)",
                "simulate.wait_seconds": "\(max(0, last.2 - WallClock.nowMilliseconds()) / 1000)",
            ])
        let windows = try await concurrentMap(due, limit: concurrency) { index, update, dueAt in
            let wait = dueAt - WallClock.nowMilliseconds()
            if wait > 0 { try await Task.sleep(for: .milliseconds(wait)) }
            let sentAt = try await self.sendUpdate(update, device: outcomes[index].device, appKey: credentials.appKey)
            return (
                index,
                ConversionWindows.index(
                    atOffset: sentAt - (dueAt - policy.milliseconds(.days(4))), development: false, policy: policy)
            )
        }
        var updated = outcomes
        for (index, window) in windows {
            updated[index].secondUpdateSent = true
            updated[index].secondUpdateWindow = window
        }
        return updated
    }

    @discardableResult
    private func sendUpdate(_ update: PostbackUpdate, device: SimulationPlan.DeviceSpec, appKey: String) async throws
        -> Milliseconds
    {
        let time = WallClock.nowMilliseconds()
        try await ingest.post(
            "/v1/conversion-value-updates",
            IngestRequests.ValueUpdate(
                deviceIdentifier: device.deviceIdentifier, advertisedItemIdentifier: SimulationPlan.advertisedItem,
                time: time, update: update),
            appKey: appKey, device: device.deviceIdentifier)
        return time
    }
}

extension Simulation.DeviceRequests {
    var conversions: [IngestRequests.Conversion] { conversion.map { [$0] } ?? [] }
    var updates: [IngestRequests.ValueUpdate] { update.map { [$0] } ?? [] }
}
