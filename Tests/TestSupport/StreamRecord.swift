import AttributionModel
import RedisStreams

/// A stream entry with all its fields, for inspecting output and dead-letter streams in tests.
public struct StreamRecord: Sendable, Equatable {
    /// The entry id.
    public let id: String
    /// Field name -> value bytes (the last value wins if a field repeats).
    public let fields: [String: [UInt8]]

    /// A record from its parts.
    public init(id: String, fields: [String: [UInt8]]) {
        self.id = id
        self.fields = fields
    }

    /// A field decoded as UTF-8.
    public func text(_ field: String) -> String? {
        self.fields[field].map { String(decoding: $0, as: UTF8.self) }
    }

    /// The message in field `e` as text: a pipeline envelope, in whichever form it was written (JSON,
    /// or 0.1.0's binary forms), as its JSON; anything else as UTF-8.
    public var message: String? {
        guard let bytes = fields["e"] else { return nil }
        guard let json = try? Envelope.decode(bytes).encoded() else { return String(decoding: bytes, as: UTF8.self) }
        return String(decoding: json, as: UTF8.self)
    }
}

/// Every entry of `stream`, oldest first (XRANGE - +).
public func streamRecords(_ stream: String, on connection: RedisConnection) async throws -> [StreamRecord] {
    let reply = try await connection.send(RedisCommand("XRANGE", stream, "-", "+"))
    return reply.elements.map { item in
        let parts = item.elements
        let id = parts.first?.string ?? ""
        let values = parts.count > 1 ? parts[1].elements : []
        var fields: [String: [UInt8]] = [:]
        var index = 0
        while index + 1 < values.count {
            fields[values[index].string ?? ""] = values[index + 1].bytes ?? []
            index += 2
        }
        return StreamRecord(id: id, fields: fields)
    }
}

/// XLEN of `stream` (0 if it does not exist).
public func streamLength(_ stream: String, on connection: RedisConnection) async throws -> Int {
    Int(try await connection.send(RedisCommand("XLEN", stream)).int ?? 0)
}
