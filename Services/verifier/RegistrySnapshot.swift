import AttributionModel
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceRuntime

/// The registry entries one batch needs, read in the batch's lookups (no per-message reads) through
/// the verifier's `RegistryCache`: ad networks, publisher apps and advertised apps by id.
struct RegistrySnapshot {
    var registry = VerifierStep.Registry()

    struct Request {
        var adNetworks: [String] = []
        var publisherApps: [ItemIdentifier] = []
        var advertisedApps: [ItemIdentifier] = []

        /// One want per hash, in `RegistrySnapshot.init`'s order.
        var wants: [RegistryCache.Want] {
            [
                .init(RegistryKeys.adNetworks, adNetworks),
                .init(RegistryKeys.publisherApps, publisherApps.map(String.init)),
                .init(RegistryKeys.advertisedApps, advertisedApps.map(String.init)),
            ]
        }
    }

    /// Decodes the resolved replies of `reads` (made from `request.wants`).
    init(request: Request, reads: RegistryReads) {
        let replies = reads.replies
        guard replies.count == 3 else { return }
        registry.adNetworks = replies[0].decodedFields(request.adNetworks, as: AdNetworkRegistration.self)
        registry.publisherApps = replies[1].decodedFields(request.publisherApps, as: PublisherAppConfiguration.self)
        registry.advertisedApps = replies[2].decodedFields(request.advertisedApps, as: AdvertisedAppConfiguration.self)
    }
}
