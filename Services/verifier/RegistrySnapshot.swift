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
        var index = offset
        func values(_ count: Int) -> [RedisReply] {
            guard count > 0, index < state.count else { return [] }
            defer { index += 1 }
            return state[index].elements
        }
        for (id, reply) in zip(request.adNetworks, values(request.adNetworks.count)) {
            if let value = Self.decode(AdNetworkRegistration.self, reply) { registry.adNetworks[id] = value }
        }
        for (id, reply) in zip(request.publisherApps, values(request.publisherApps.count)) {
            if let value = Self.decode(PublisherAppConfiguration.self, reply) { registry.publisherApps[id] = value }
        }
        for (id, reply) in zip(request.advertisedApps, values(request.advertisedApps.count)) {
            if let value = Self.decode(AdvertisedAppConfiguration.self, reply) { registry.advertisedApps[id] = value }
        }
    }

    static func decode<T: Decodable>(_ type: T.Type, _ reply: RedisReply) -> T? {
        guard case .bulk(let bytes) = reply else { return nil }
        return try? JSONCoding.decoder.decode(T.self, from: Data(bytes))
    }
}
