import AttributionCrypto
import AttributionModel
import CryptoPrimitives
import Foundation
import TestSupport

/// What a request example names that must be made at the time of sending, for the services to answer
/// it as documented: the ad network's keys (the document shows public keys whose private halves nobody
/// holds), impressions signed with them now (a fresh impression id, as each is usable once), times
/// moved so that the latest example time is now, unique idempotency keys, and values the services
/// handed out earlier in the run (a re-engagement's conversion tag).
struct OpenAPIExampleFreshening {
    /// Added to every example time: the examples keep their spacing, the latest is now.
    let offset: Int
    /// The network's keys, one per `public-key` the examples register, in the order registered.
    private var keys: [String: P256.Signing.PrivateKey] = [:]
    private var signing: P256.Signing.PrivateKey?
    private let skadnetworkKey = P256.Signing.PrivateKey()
    /// A value of the document → the one the services handed out in this run.
    var replacements: [String: String] = [:]

    static let timeMembers: Set = ["time", "loaded-at", "begin"]

    /// Milliseconds since 1970, not a time in seconds an example sends to be refused.
    static func isTime(_ value: Int64) -> Bool { value > 1_000_000_000_000 }

    init(latestExampleTime: Int, now: Int = Int(Date().timeIntervalSince1970 * 1000)) {
        offset = now - latestExampleTime
    }

    /// The latest time any of `values` names.
    static func latestTime(in values: [JSONTree]) -> Int {
        func times(_ value: JSONTree) -> [Int] {
            switch value {
            case .object(let members):
                members.flatMap { name, member in
                    timeMembers.contains(name) ? [member.integer].compactMap { $0 }.filter { isTime(Int64($0)) } : times(member)
                }
            case .array(let items): items.flatMap(times)
            default: []
            }
        }
        return values.flatMap(times).max() ?? 0
    }

    mutating func fresh(_ value: JSONTree) throws -> JSONTree {
        switch value {
        case .object(let members):
            var fresh: [String: JSONTree] = [:]
            for (name, member) in members { fresh[name] = try self.fresh(member, named: name) }
            return .object(fresh)
        case .array(let items):
            return .array(try items.map { try self.fresh($0) })
        case .string(let text):
            return .string(replacements[text] ?? text)
        default:
            return value
        }
    }

    private mutating func fresh(_ value: JSONTree, named name: String) throws -> JSONTree {
        switch (name, value) {
        case ("public-key", .string(let documented)):
            let key = keys[documented] ?? P256.Signing.PrivateKey()
            keys[documented] = key
            signing = key
            return .string(key.publicKey.pemRepresentation)
        case ("skan-public-key", .string):
            return .string(skadnetworkKey.publicKey.derRepresentation.base64EncodedString())
        case ("impression", .string(let jws)) where jws.split(separator: ".").count == 3:
            return .string(try signedImpression(like: jws))
        case ("skadnetwork-impression", .object):
            var impression = try JSONCoding.decoder.decode(SKANImpression.self, from: value.data)
            impression.nonce = UUID().uuidString.lowercased()
            impression.timestamp += Milliseconds(offset)
            impression.signature = try SKANSignature.sign(message: impression.signedMessage, with: skadnetworkKey)
            return try JSONTree.parse(JSONCoding.encoder.encode(impression))
        case ("idempotency-key", .string(let key)):
            return .string("\(key)-\(UUID().uuidString.lowercased())")
        case (_, .integer(let time)) where Self.timeMembers.contains(name) && Self.isTime(time):
            return .integer(time + Int64(offset))
        default:
            return try fresh(value)
        }
    }

    /// The impression `jws` carries, with a new id and its time moved, signed now with the key the
    /// network registered last.
    private func signedImpression(like jws: String) throws -> String {
        let parts = jws.split(separator: ".")
        guard let key = signing, let header = Base64URL.decode(parts[0]), let payload = Base64URL.decode(parts[1]),
            let kid = try JSONTree.parse(header)["kid"]?.string, var claims = try JSONTree.parse(payload).object,
            let timestamp = claims["timestamp"]?.integer
        else {
            throw TestSupportError("an impression example that is not a signed JWS, or no network key registered before it")
        }
        claims["impression-identifier"] = .string(UUID().uuidString)
        claims["timestamp"] = .integer(Int64(timestamp + offset))
        return try CompactJWS.sign(payload: JSONTree.object(claims).data, keyID: kid, with: key)
    }
}
