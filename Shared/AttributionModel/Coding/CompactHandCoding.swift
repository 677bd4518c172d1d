import Foundation

/// The stored-state codec: how a stage writes and reads the state it keeps for itself in Redis (a
/// device's attribution state, a conversion's postback plan), in `CompactCoding`'s layout, by hand.
/// These blobs are read and written on every event of their device or conversion; JSON, and then
/// Codable's per-value dispatch over the same layout, were each about a fifth of attribution-winner's
/// and the scheduler's CPU per event (`attribution-bench coding` compares this codec with the message
/// codec).
///
/// Each writer mirrors its type's `Codable` form as release 0.1.0 wrote it (same keys, same order,
/// optional keys left out when nil), so what 0.1.0 stored is read (`StoredStateCodingTests`, over
/// `Fixtures/stored-state-0.1.0.txt`). The readers of the per-event types read keys in the order the
/// writer puts them; those of rare members (pending updates and activities, a schema and its totals)
/// read a container's keys in any order. Anything else (damage, another layout, JSON) is refused as
/// corrupt, naming the type and the byte where reading stopped: never a default, never an empty value.
protocol CompactHandCoded {
    func write(to writer: inout CompactWriter)
    init(reading reader: inout CompactReader) throws
}

/// Appends values in `CompactCoding`'s layout (see there for the tags).
struct CompactWriter {
    typealias Tag = CompactCoding.Tag
    var bytes: [UInt8]

    /// A keyed container whose entries `body` writes (each a `key` then its value).
    mutating func keyed(_ body: (inout CompactWriter) throws -> Void) rethrows {
        let placeholder = CompactCoding.openContainer(Tag.keyed, in: &bytes)
        try body(&self)
        CompactCoding.closeContainer(at: placeholder, in: &bytes)
    }

    /// An array of `elements`, each written by `element`.
    mutating func array<S: Sequence>(_ elements: S, _ element: (inout CompactWriter, S.Element) throws -> Void) rethrows {
        let placeholder = CompactCoding.openContainer(Tag.array, in: &bytes)
        for value in elements { try element(&self, value) }
        CompactCoding.closeContainer(at: placeholder, in: &bytes)
    }

    mutating func key(_ name: StaticString) {
        name.withUTF8Buffer { CompactCoding.appendKey($0, to: &bytes) }
    }

    mutating func string(_ value: String) {
        bytes.append(Tag.string)
        var value = value
        value.withUTF8 { CompactCoding.appendText($0, to: &bytes) }
    }

    mutating func signed(_ value: some FixedWidthInteger) { CompactCoding.appendInteger(Int64(value), to: &bytes) }
    mutating func unsigned(_ value: UInt64) { CompactCoding.appendInteger(value, to: &bytes) }
    mutating func bool(_ value: Bool) { bytes.append(value ? Tag.trueValue : Tag.falseValue) }
    mutating func null() { bytes.append(Tag.null) }

    /// A decimal (revenue) as its exact text.
    mutating func decimal(_ value: Decimal) {
        bytes.append(Tag.decimal)
        CompactCoding.appendText(Array(value.description.utf8), to: &bytes)
    }

    /// A dictionary as a keyed container (its keys numbered by `CompactKeys` like any key, as
    /// `Codable` writes a dictionary keyed by strings), in key order, so that equal values write equal bytes.
    mutating func dictionary<V>(_ entries: [String: V], _ value: (inout CompactWriter, V) -> Void) {
        keyed { writer in
            for (key, entry) in entries.sorted(by: { $0.key < $1.key }) {
                var key = key
                key.withUTF8 { CompactCoding.appendKey($0, to: &writer.bytes) }
                value(&writer, entry)
            }
        }
    }

    // MARK: - Entries of a keyed container: the key, then the value (as `encode(_:forKey:)` writes it).

    mutating func field(_ key: StaticString, _ value: String) {
        self.key(key)
        string(value)
    }
    mutating func field(_ key: StaticString, _ value: some FixedWidthInteger & SignedInteger) {
        self.key(key)
        signed(value)
    }
    mutating func field(_ key: StaticString, _ value: UInt64) {
        self.key(key)
        unsigned(value)
    }
    mutating func field(_ key: StaticString, _ value: Bool) {
        self.key(key)
        bool(value)
    }
    /// An enum (or other type) coded as its string raw value.
    mutating func field<T: RawRepresentable>(_ key: StaticString, _ value: T) where T.RawValue == String {
        field(key, value.rawValue)
    }

    // `encodeIfPresent`: nothing at all for nil.
    mutating func field(_ key: StaticString, ifPresent value: String?) {
        if let value { field(key, value) }
    }
    mutating func field(_ key: StaticString, ifPresent value: (some FixedWidthInteger & SignedInteger)?) {
        if let value { field(key, value) }
    }
    mutating func field(_ key: StaticString, ifPresent value: Bool?) {
        if let value { field(key, value) }
    }
    mutating func field<T: RawRepresentable>(_ key: StaticString, ifPresent value: T?) where T.RawValue == String {
        if let value { field(key, value.rawValue) }
    }
}

/// Reads what `CompactWriter` wrote; `Mismatch` for anything else.
struct CompactReader {
    typealias Tag = CompactCoding.Tag
    /// Not damage, necessarily: only not the layout this reader expects (see `CompactHandCoded`).
    struct Mismatch: Error {}

    /// The primitives (tags, varints, container lengths, text, integers) are `CompactDecoder`'s own.
    private let decoder: CompactDecoder
    var buffer: UnsafeBufferPointer<UInt8> { decoder.buffer }
    var position: Int
    /// Where the keyed container being read ends: an optional key is looked for before it.
    private var containerEnd: Int

    init(buffer: UnsafeBufferPointer<UInt8>, position: Int) {
        self.decoder = CompactDecoder(buffer: buffer, position: position)
        self.position = position
        self.containerEnd = buffer.count
    }

    /// A container's contents start here; where they end.
    private mutating func container(_ tag: UInt8) throws -> Int {
        let (start, end) = try decoder.contents(of: tag, at: position)
        position = start
        return end
    }

    /// The value at `position` read by `read`, then `position` past it.
    private mutating func value<T>(_ read: (CompactDecoder, Int) throws -> T) throws -> T {
        let value = try read(decoder, position)
        position = try decoder.end(ofValueAt: position)
        return value
    }

    /// A keyed container: `body` reads its entries, which must end where the container does.
    mutating func keyed<T>(_ body: (inout CompactReader) throws -> T) throws -> T {
        let end = try container(Tag.keyed)
        let outer = containerEnd
        containerEnd = end
        defer { containerEnd = outer }
        let value = try body(&self)
        guard position == end else { throw Mismatch() }
        return value
    }

    /// An array's elements, each read by `element`.
    mutating func array<T>(_ element: (inout CompactReader) throws -> T) throws -> [T] {
        let end = try container(Tag.array)
        var values: [T] = []
        while position < end { values.append(try element(&self)) }
        guard position == end else { throw Mismatch() }
        return values
    }

    /// A keyed container's entries in any order: `entry` gets each key and reads its value, throwing
    /// `Mismatch` for a key it does not know. A key written twice is refused.
    mutating func entries(_ entry: (inout CompactReader, String) throws -> Void) throws {
        try keyed { reader in
            var seen: Set<String> = []
            while reader.position < reader.containerEnd {
                var cursor = reader.position
                guard let bytes = try reader.decoder.key(at: &cursor, end: reader.containerEnd) else { throw Mismatch() }
                let key = String(decoding: bytes, as: UTF8.self)
                guard seen.insert(key).inserted else { throw Mismatch() }
                reader.position = cursor
                try entry(&reader, key)
            }
        }
    }

    /// A dictionary written by `CompactWriter.dictionary`, or by `Codable` in any key order.
    mutating func dictionary<V>(_ value: (inout CompactReader) throws -> V) throws -> [String: V] {
        var result: [String: V] = [:]
        try entries { reader, key in result[key] = try value(&reader) }
        return result
    }

    /// The next key, which must be `name`.
    mutating func key(_ name: StaticString) throws {
        guard try optionalKey(name) else { throw Mismatch() }
    }

    /// Whether the container's next key is `name`; if so it is read, else nothing is.
    mutating func optionalKey(_ name: StaticString) throws -> Bool {
        guard position < containerEnd else { return false }
        var cursor = position
        // A key this binary's table does not number is no key this reader asks for.
        guard let key = try decoder.key(at: &cursor, end: containerEnd),
            name.withUTF8Buffer({ CompactCoding.same(key, $0) })
        else { return false }
        position = cursor
        return true
    }

    mutating func string() throws -> String { try value { try $0.string(at: $1) } }
    mutating func signed<T: FixedWidthInteger>(_ type: T.Type = Int64.self) throws -> T {
        try value { try $0.integer(T.self, at: $1) }
    }
    mutating func unsigned() throws -> UInt64 { try value { try $0.integer(UInt64.self, at: $1) } }
    mutating func bool() throws -> Bool { try value { try $0.bool(at: $1) } }
    mutating func decimal() throws -> Decimal { try value { try $0.decimal(at: $1) } }

    /// Whether the next value is nil; if so it is read.
    mutating func null() -> Bool {
        guard position < buffer.count, buffer[position] == Tag.null else { return false }
        position += 1
        return true
    }

    /// A string that must be one of `T`'s raw values.
    mutating func raw<T: RawRepresentable>(_ type: T.Type) throws -> T where T.RawValue == String {
        guard let value = T(rawValue: try string()) else { throw Mismatch() }
        return value
    }

    // MARK: - Entries of a keyed container, in the writer's order (`ifPresent`: nil when the key is absent).

    mutating func string(_ key: StaticString) throws -> String {
        try self.key(key)
        return try string()
    }
    mutating func signed<T: FixedWidthInteger>(_ key: StaticString, as type: T.Type = Int64.self) throws -> T {
        try self.key(key)
        return try signed(T.self)
    }
    mutating func unsigned(_ key: StaticString) throws -> UInt64 {
        try self.key(key)
        return try unsigned()
    }
    mutating func bool(_ key: StaticString) throws -> Bool {
        try self.key(key)
        return try bool()
    }
    mutating func raw<T: RawRepresentable>(_ key: StaticString, as type: T.Type) throws -> T where T.RawValue == String {
        try self.key(key)
        return try raw(T.self)
    }

    mutating func string(ifPresent key: StaticString) throws -> String? {
        try optionalKey(key) ? try string() : nil
    }
    mutating func signed<T: FixedWidthInteger>(ifPresent key: StaticString, as type: T.Type = Int64.self) throws -> T? {
        try optionalKey(key) ? try signed(T.self) : nil
    }
    mutating func bool(ifPresent key: StaticString) throws -> Bool? {
        try optionalKey(key) ? try bool() : nil
    }
    mutating func raw<T: RawRepresentable>(ifPresent key: StaticString, as type: T.Type) throws -> T?
    where T.RawValue == String {
        try optionalKey(key) ? try raw(T.self) : nil
    }
}

extension CompactCoding {
    /// A device's attribution state as stored.
    public static func encode(_ state: DeviceAttributionState) -> [UInt8] { encodeByHand(state) }
    /// A conversion's postback plan as stored.
    public static func encode(_ plan: PostbackPlan) -> [UInt8] { encodeByHand(plan) }

    /// The device state stored as `bytes`; anything else (damage, JSON, another layout) throws.
    public static func decode(_ type: DeviceAttributionState.Type, from bytes: [UInt8]) throws -> DeviceAttributionState {
        try decodeByHand(type, from: bytes)
    }

    /// The postback plan stored as `bytes`; anything else (damage, JSON, another layout) throws.
    public static func decode(_ type: PostbackPlan.Type, from bytes: [UInt8]) throws -> PostbackPlan {
        try decodeByHand(type, from: bytes)
    }

    static func encodeByHand(_ value: some CompactHandCoded) -> [UInt8] {
        var writer = CompactWriter(bytes: [magic, version])
        writer.bytes.reserveCapacity(512)
        value.write(to: &writer)
        return writer.bytes
    }

    static func decodeByHand<T: CompactHandCoded>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try bytes.withUnsafeBufferPointer { buffer in
            guard buffer.count >= 2, buffer[0] == magic else {
                throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "not in the compact form"))
            }
            guard buffer[1] == version else {
                throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "unknown compact coding version"))
            }
            var reader = CompactReader(buffer: buffer, position: 2)
            do {
                let value = try T(reading: &reader)
                guard reader.position == buffer.count else { throw CompactReader.Mismatch() }
                return value
            } catch {
                var reason = "unexpected layout"
                if case .dataCorrupted(let context)? = error as? DecodingError { reason = context.debugDescription }
                throw DecodingError.dataCorrupted(
                    .init(codingPath: [], debugDescription: "not a stored \(T.self): \(reason) at byte \(reader.position)"))
            }
        }
    }
}
