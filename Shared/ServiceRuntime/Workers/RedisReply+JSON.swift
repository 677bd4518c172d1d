import AttributionModel
import Foundation
import RedisStreams

extension RedisReply {
    /// A bulk reply holding one JSON value (a state, a plan, a registration); nil when absent or not `T`.
    public func decoded<T: Decodable>(as type: T.Type) -> T? {
        bytes.flatMap { try? JSONCoding.decoder.decode(T.self, from: Data($0)) }
    }

    /// An HMGET reply for `fields`: each field whose value is a JSON `T`.
    public func decodedFields<Field: Hashable, T: Decodable>(_ fields: [Field], as type: T.Type) -> [Field: T] {
        var found: [Field: T] = [:]
        for (field, value) in zip(fields, elements) {
            if let decoded = value.decoded(as: T.self) { found[field] = decoded }
        }
        return found
    }
}
