import Foundation

/// Hand-written `CompactCoding` for the state read and written on every event (a conversion's postback
/// plan, a device's attribution state): the same bytes `CompactEncoder` writes for the type's
/// `Codable` form (keys numbered by `CompactKeys` alike), without Codable's per-value dispatch,
/// container boxes and generic metadata lookups, which were about a fifth of the scheduler's and of
/// attribution-winner's CPU per event.
///
/// `CompactCoding.encode` and `decode` take this path for a conforming type and fall back to the
/// `Codable` one otherwise, and when the writer throws (a value it leaves to `Codable`). The reader is
/// strict: it reads keys in the order the writer puts them, and anything else (a blob written by an
/// older or newer binary, another key order, JSON, damage) throws, upon which `CompactCoding.decode`
/// reads the bytes through `CompactDecoder`, which finds keys wherever they are, fills defaults and
/// reports real damage.
/// `CompactHandCodingTests` holds the hand-written bytes to the `Codable` ones, and the hand-read
/// values to `CompactDecoder`'s.
protocol CompactHandCoded {
    func write(to writer: inout CompactWriter) throws
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

    /// A value of a type without a hand-written form, through `CompactEncoder`, into the same bytes.
    mutating func encodable<T: Encodable>(_ value: T) throws {
        let encoder = CompactEncoder()
        swap(&encoder.bytes, &bytes)
        defer { swap(&encoder.bytes, &bytes) }
        try encoder.encodeValue(value)
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

/// Reads what `CompactWriter` wrote, in the order it wrote it; `Mismatch` for anything else.
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

    /// A value of a type without a hand-written form, through `CompactDecoder`.
    mutating func decodable<T: Decodable>(_ type: T.Type) throws -> T {
        try value { try $0.decodeValue(T.self, at: $1) }
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
    /// The hand-written form of `value` (the same bytes as its `Codable` form).
    static func encodeByHand(_ value: some CompactHandCoded) throws -> [UInt8] {
        var writer = CompactWriter(bytes: [magic, version])
        writer.bytes.reserveCapacity(512)
        try value.write(to: &writer)
        return writer.bytes
    }

    /// The hand-read value of compact `bytes`, nil when they are not in the layout the reader expects.
    static func decodeByHand<T: CompactHandCoded>(_ type: T.Type, from bytes: [UInt8]) -> T? {
        bytes.withUnsafeBufferPointer { buffer in
            guard buffer.count >= 2, buffer[0] == magic, buffer[1] == version else { return nil }
            var reader = CompactReader(buffer: buffer, position: 2)
            guard let value = try? T(reading: &reader), reader.position == buffer.count else { return nil }
            return value
        }
    }
}
