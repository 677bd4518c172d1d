import AttributionModel
import Foundation
import RedisStreams
import ServiceRuntime

/// The registry entries one batch needs, read in the batch's single read pipeline (no per-message
/// lookups): ad networks, publisher apps and advertised apps by id.
struct RegistrySnapshot {
    var registry = VerifierStep.Registry()

    struct Request {
        var adNetworks: [String] = []
        var publisherApps: [ItemIdentifier] = []
        var advertisedApps: [ItemIdentifier] = []

        /// Three HMGETs, one per hash (an HMGET needs at least one field, so absent ones are skipped).
        var commands: [RedisCommand] {
            var commands: [RedisCommand] = []
            if !adNetworks.isEmpty { commands.append(RedisCommand(["HMGET", RegistryKeys.adNetworks] + adNetworks)) }
            if !publisherApps.isEmpty {
                commands.append(RedisCommand(["HMGET", RegistryKeys.publisherApps] + publisherApps.map(String.init)))
            }
            if !advertisedApps.isEmpty {
                commands.append(RedisCommand(["HMGET", RegistryKeys.advertisedApps] + advertisedApps.map(String.init)))
            }
            return commands
        }
    }

    /// Reads the replies of `request.commands`, starting at `offset` in `state`.
    init(request: Request, state: [RedisReply], offset: Int) {
        var replies = state.dropFirst(offset)[...]
        // One HMGET per non-empty request, in `commands`' order.
        func next<Field: Hashable, T: Decodable>(_ fields: [Field], _ type: T.Type) -> [Field: T] {
            guard !fields.isEmpty, let reply = replies.popFirst() else { return [:] }
            return reply.decodedFields(fields, as: T.self)
        }
        registry.adNetworks = next(request.adNetworks, AdNetworkRegistration.self)
        registry.publisherApps = next(request.publisherApps, PublisherAppConfiguration.self)
        registry.advertisedApps = next(request.advertisedApps, AdvertisedAppConfiguration.self)
    }
}
