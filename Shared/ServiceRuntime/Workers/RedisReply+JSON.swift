import AttributionModel
import Foundation
import RedisStreams

extension RedisReply {
    /// A bulk reply holding a state or a plan in `CompactCoding`'s binary form; nil when absent or not `T`.
    public func decoded<T: Decodable>(as type: T.Type) -> T? {
        bytes.flatMap { try? CompactCoding.decode(T.self, from: $0) }
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
