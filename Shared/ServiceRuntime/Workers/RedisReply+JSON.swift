import AttributionModel
import Foundation
import RedisStreams

extension RedisReply {
    /// A bulk reply holding a device's state as stored; nil when absent or unreadable.
    public func decoded(as type: DeviceAttributionState.Type) -> DeviceAttributionState? {
        bytes.flatMap { try? CompactCoding.decode(type, from: $0) }
    }

    /// A bulk reply holding a postback plan as stored; nil when absent or unreadable.
    public func decoded(as type: PostbackPlan.Type) -> PostbackPlan? {
        bytes.flatMap { try? CompactCoding.decode(type, from: $0) }
    }

    /// A bulk reply holding a JSON value (a registration, a schema); nil when absent or not `T`.
    public func decodedJSON<T: Decodable>(as type: T.Type) -> T? {
        bytes.flatMap { try? JSONCoding.decoder.decode(T.self, from: Data($0)) }
    }

    /// An HMGET reply for `fields`: each field whose value is a JSON `T`.
    public func decodedFields<Field: Hashable, T: Decodable>(_ fields: [Field], as type: T.Type) -> [Field: T] {
        var found: [Field: T] = [:]
        for (field, value) in zip(fields, elements) {
            if let decoded = value.decodedJSON(as: T.self) { found[field] = decoded }
        }
        return found
    }
}
