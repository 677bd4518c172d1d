import Foundation

/// Reads `CompactCoding`'s layout straight from the buffer: no tree is built. A keyed container finds a
/// key by walking its entries (a handful per type, in the order they were written), skipping each
/// value by its tag and length.
final class CompactDecoder: Decoder {
    typealias Tag = CompactCoding.Tag

    let buffer: UnsafeBufferPointer<UInt8>
    /// Offset of the tag of the value being decoded.
    var position: Int

    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(buffer: UnsafeBufferPointer<UInt8>, position: Int) {
        self.buffer = buffer
        self.position = position
    }

    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T { try decodeValue(T.self, at: position) }

    func decodeValue<T: Decodable>(_ type: T.Type, at offset: Int) throws -> T {
        if T.self == Decimal.self { return try decimal(at: offset) as! T }
        let saved = position
        position = offset
        defer { position = saved }
        return try T(from: self)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        let (start, end) = try contents(of: Tag.keyed, at: position)
        return KeyedDecodingContainer(KeyedContainer<Key>(decoder: self, start: start, end: end))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (start, end) = try contents(of: Tag.array, at: position)
        return UnkeyedContainer(decoder: self, start: start, end: end, position: start)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValueContainer(decoder: self, offset: position)
    }

    // MARK: - Reading

    static func corrupted(_ description: String) -> DecodingError {
        .dataCorrupted(.init(codingPath: [], debugDescription: "compact coding: \(description)"))
    }

    func byte(at offset: Int) throws -> UInt8 {
        guard offset >= 0, offset < buffer.count else { throw Self.corrupted("truncated") }
        return buffer[offset]
    }

    func varint(at offset: inout Int) throws -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while shift < 64 {
            let byte = try byte(at: offset)
            offset += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
        throw Self.corrupted("varint too long")
    }

    /// The key at `offset`, before a container's `end`, and `offset` moved past it: its UTF-8 (in the
    /// buffer, or in `CompactKeys` for a numbered key), or nil for a number this binary's table does
    /// not have (a newer writer's key, which no reader here asks for).
    func key(at offset: inout Int, end: Int) throws -> UnsafeBufferPointer<UInt8>? {
        let value = try varint(at: &offset)
        if value & 1 == 1 { return CompactKeys.text(value >> 1) }
        let count = Int(clamping: value >> 1)
        guard count <= end - offset else { throw Self.corrupted("truncated key") }
        defer { offset += count }
        return UnsafeBufferPointer(rebasing: buffer[offset..<offset + count])
    }

    func uint32(at offset: Int) throws -> Int {
        guard offset + 4 <= buffer.count else { throw Self.corrupted("truncated") }
        var value = 0
        for index in 0..<4 { value |= Int(buffer[offset + index]) << (8 * index) }
        return value
    }

    /// The byte range of a container's contents.
    func contents(of tag: UInt8, at offset: Int) throws -> (start: Int, end: Int) {
        guard try byte(at: offset) == tag else {
            throw Self.corrupted(tag == Tag.keyed ? "expected a keyed container" : "expected an array")
        }
        let start = offset + 5
        let end = start + (try uint32(at: offset + 1))
        guard end <= buffer.count else { throw Self.corrupted("truncated") }
        return (start, end)
    }

    /// The offset just past the value at `offset`.
    func end(ofValueAt offset: Int) throws -> Int {
        var cursor = offset + 1
        switch try byte(at: offset) {
        case Tag.null, Tag.falseValue, Tag.trueValue: return cursor
        case Tag.signed, Tag.unsigned:
            _ = try varint(at: &cursor)
            return cursor
        case Tag.double: cursor += 8
        case Tag.string, Tag.decimal:
            // A hostile length is refused, never trapped on: no overflow in the sum below.
            let count = Int(clamping: try varint(at: &cursor))
            guard count <= buffer.count - cursor else { throw Self.corrupted("truncated") }
            cursor += count
        case Tag.array, Tag.keyed: cursor += 4 + (try uint32(at: cursor))
        default: throw Self.corrupted("unknown tag")
        }
        guard cursor <= buffer.count else { throw Self.corrupted("truncated") }
        return cursor
    }

    func isNil(at offset: Int) throws -> Bool { try byte(at: offset) == Tag.null }

    func bool(at offset: Int) throws -> Bool {
        switch try byte(at: offset) {
        case Tag.trueValue: return true
        case Tag.falseValue: return false
        default: throw Self.corrupted("expected a Bool")
        }
    }

    func string(at offset: Int) throws -> String {
        guard try byte(at: offset) == Tag.string else { throw Self.corrupted("expected a String") }
        return try text(at: offset)
    }

    func decimal(at offset: Int) throws -> Decimal {
        guard try byte(at: offset) == Tag.decimal, let decimal = Decimal(string: try text(at: offset)) else {
            throw Self.corrupted("expected a Decimal")
        }
        return decimal
    }

    /// The text of a String or Decimal value.
    private func text(at offset: Int) throws -> String {
        var cursor = offset + 1
        let count = Int(clamping: try varint(at: &cursor))
        guard count <= buffer.count - cursor else { throw Self.corrupted("truncated") }
        return String(decoding: UnsafeBufferPointer(rebasing: buffer[cursor..<cursor + count]), as: UTF8.self)
    }

    func integer<T: FixedWidthInteger>(_ type: T.Type, at offset: Int) throws -> T {
        var cursor = offset + 1
        let result: T?
        switch try byte(at: offset) {
        case Tag.signed:
            let zigzag = try varint(at: &cursor)
            result = T(exactly: Int64(bitPattern: zigzag >> 1) ^ -Int64(bitPattern: zigzag & 1))
        case Tag.unsigned: result = T(exactly: try varint(at: &cursor))
        default: throw Self.corrupted("expected an integer")
        }
        guard let result else { throw Self.corrupted("integer out of range for \(T.self)") }
        return result
    }

    func double(at offset: Int) throws -> Double {
        switch try byte(at: offset) {
        case Tag.double:
            guard offset + 9 <= buffer.count else { throw Self.corrupted("truncated") }
            var pattern: UInt64 = 0
            for index in 0..<8 { pattern |= UInt64(buffer[offset + 1 + index]) << (8 * UInt64(index)) }
            return Double(bitPattern: pattern)
        case Tag.signed: return Double(try integer(Int64.self, at: offset))
        case Tag.unsigned: return Double(try integer(UInt64.self, at: offset))
        default: throw Self.corrupted("expected a number")
        }
    }

    // MARK: - Containers

    struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let decoder: CompactDecoder
        let start: Int
        let end: Int
        var codingPath: [any CodingKey] { [] }

        /// Each key in the order written, with its value's offset.
        private func entries() throws -> [(name: String, value: Int)] {
            var found: [(name: String, value: Int)] = []
            var cursor = start
            while cursor < end {
                if let key = try decoder.key(at: &cursor, end: end) {
                    found.append((String(decoding: key, as: UTF8.self), cursor))
                }
                cursor = try decoder.end(ofValueAt: cursor)
            }
            return found
        }

        var allKeys: [Key] { ((try? entries()) ?? []).compactMap { Key(stringValue: $0.name) } }

        /// The offset of `key`'s value, nil when absent.
        func find(_ key: Key) throws -> Int? {
            var name = key.stringValue
            return try name.withUTF8 { wanted in
                var cursor = start
                while cursor < end {
                    if let key = try decoder.key(at: &cursor, end: end), CompactCoding.same(key, wanted) { return cursor }
                    cursor = try decoder.end(ofValueAt: cursor)
                }
                return nil
            }
        }

        private func value(_ key: Key) throws -> Int {
            guard let offset = try find(key) else {
                throw DecodingError.keyNotFound(key, .init(codingPath: [], debugDescription: "compact coding: no value"))
            }
            return offset
        }

        /// The offset of a present, non-nil value.
        private func present(_ key: Key) throws -> Int? {
            guard let offset = try find(key), try !decoder.isNil(at: offset) else { return nil }
            return offset
        }

        func contains(_ key: Key) -> Bool { ((try? find(key)) ?? nil) != nil }
        func decodeNil(forKey key: Key) throws -> Bool { try decoder.isNil(at: value(key)) }

        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decoder.bool(at: value(key)) }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { try decoder.string(at: value(key)) }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try decoder.double(at: value(key)) }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { Float(try decoder.double(at: value(key))) }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try decoder.integer(type, at: value(key)) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try decoder.integer(type, at: value(key)) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try decoder.integer(type, at: value(key)) }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try decoder.integer(type, at: value(key)) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try decoder.integer(type, at: value(key)) }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try decoder.integer(type, at: value(key)) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try decoder.integer(type, at: value(key)) }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try decoder.integer(type, at: value(key)) }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try decoder.integer(type, at: value(key)) }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try decoder.integer(type, at: value(key)) }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            try decoder.decodeValue(T.self, at: value(key))
        }

        // One walk per optional key (the protocol's defaults walk three times: contains, nil, value).
        func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
            try present(key).map { try decoder.bool(at: $0) }
        }
        func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
            try present(key).map { try decoder.string(at: $0) }
        }
        func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
            try present(key).map { try decoder.double(at: $0) }
        }
        func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
            try present(key).map { try decoder.integer(type, at: $0) }
        }
        func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? {
            try present(key).map { try decoder.integer(type, at: $0) }
        }
        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
            try present(key).map { try decoder.decodeValue(T.self, at: $0) }
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
            -> KeyedDecodingContainer<NestedKey>
        {
            let (start, end) = try decoder.contents(of: Tag.keyed, at: value(key))
            return KeyedDecodingContainer(KeyedContainer<NestedKey>(decoder: decoder, start: start, end: end))
        }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            let (start, end) = try decoder.contents(of: Tag.array, at: value(key))
            return UnkeyedContainer(decoder: decoder, start: start, end: end, position: start)
        }
        func superDecoder() throws -> any Decoder {
            throw CompactDecoder.corrupted("super decoders are not written")
        }
        func superDecoder(forKey key: Key) throws -> any Decoder {
            CompactDecoder(buffer: decoder.buffer, position: try value(key))
        }
    }

    struct UnkeyedContainer: UnkeyedDecodingContainer {
        let decoder: CompactDecoder
        let start: Int
        let end: Int
        var position: Int
        var currentIndex = 0
        var codingPath: [any CodingKey] { [] }

        init(decoder: CompactDecoder, start: Int, end: Int, position: Int) {
            self.decoder = decoder
            self.start = start
            self.end = end
            self.position = position
        }

        var count: Int? {
            var cursor = start
            var count = 0
            while cursor < end {
                guard let next = try? decoder.end(ofValueAt: cursor) else { return nil }
                cursor = next
                count += 1
            }
            return count
        }
        var isAtEnd: Bool { position >= end }

        /// The offset of the next element, moving past it.
        private mutating func next() throws -> Int {
            guard position < end else { throw CompactDecoder.corrupted("no more elements") }
            let offset = position
            position = try decoder.end(ofValueAt: offset)
            currentIndex += 1
            return offset
        }

        mutating func decodeNil() throws -> Bool {
            guard position < end, try decoder.isNil(at: position) else { return false }
            _ = try next()
            return true
        }
        mutating func decode(_ type: Bool.Type) throws -> Bool { try decoder.bool(at: next()) }
        mutating func decode(_ type: String.Type) throws -> String { try decoder.string(at: next()) }
        mutating func decode(_ type: Double.Type) throws -> Double { try decoder.double(at: next()) }
        mutating func decode(_ type: Float.Type) throws -> Float { Float(try decoder.double(at: next())) }
        mutating func decode(_ type: Int.Type) throws -> Int { try decoder.integer(type, at: next()) }
        mutating func decode(_ type: Int8.Type) throws -> Int8 { try decoder.integer(type, at: next()) }
        mutating func decode(_ type: Int16.Type) throws -> Int16 { try decoder.integer(type, at: next()) }
        mutating func decode(_ type: Int32.Type) throws -> Int32 { try decoder.integer(type, at: next()) }
        mutating func decode(_ type: Int64.Type) throws -> Int64 { try decoder.integer(type, at: next()) }
        mutating func decode(_ type: UInt.Type) throws -> UInt { try decoder.integer(type, at: next()) }
        mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try decoder.integer(type, at: next()) }
        mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try decoder.integer(type, at: next()) }
        mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try decoder.integer(type, at: next()) }
        mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try decoder.integer(type, at: next()) }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.decodeValue(T.self, at: next()) }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
            -> KeyedDecodingContainer<NestedKey>
        {
            let (start, end) = try decoder.contents(of: Tag.keyed, at: next())
            return KeyedDecodingContainer(KeyedContainer<NestedKey>(decoder: decoder, start: start, end: end))
        }
        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            let (start, end) = try decoder.contents(of: Tag.array, at: next())
            return UnkeyedContainer(decoder: decoder, start: start, end: end, position: start)
        }
        mutating func superDecoder() throws -> any Decoder {
            CompactDecoder(buffer: decoder.buffer, position: try next())
        }
    }

    struct SingleValueContainer: SingleValueDecodingContainer {
        let decoder: CompactDecoder
        let offset: Int
        var codingPath: [any CodingKey] { [] }

        func decodeNil() -> Bool { (try? decoder.isNil(at: offset)) ?? false }
        func decode(_ type: Bool.Type) throws -> Bool { try decoder.bool(at: offset) }
        func decode(_ type: String.Type) throws -> String { try decoder.string(at: offset) }
        func decode(_ type: Double.Type) throws -> Double { try decoder.double(at: offset) }
        func decode(_ type: Float.Type) throws -> Float { Float(try decoder.double(at: offset)) }
        func decode(_ type: Int.Type) throws -> Int { try decoder.integer(type, at: offset) }
        func decode(_ type: Int8.Type) throws -> Int8 { try decoder.integer(type, at: offset) }
        func decode(_ type: Int16.Type) throws -> Int16 { try decoder.integer(type, at: offset) }
        func decode(_ type: Int32.Type) throws -> Int32 { try decoder.integer(type, at: offset) }
        func decode(_ type: Int64.Type) throws -> Int64 { try decoder.integer(type, at: offset) }
        func decode(_ type: UInt.Type) throws -> UInt { try decoder.integer(type, at: offset) }
        func decode(_ type: UInt8.Type) throws -> UInt8 { try decoder.integer(type, at: offset) }
        func decode(_ type: UInt16.Type) throws -> UInt16 { try decoder.integer(type, at: offset) }
        func decode(_ type: UInt32.Type) throws -> UInt32 { try decoder.integer(type, at: offset) }
        func decode(_ type: UInt64.Type) throws -> UInt64 { try decoder.integer(type, at: offset) }
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.decodeValue(T.self, at: offset) }
    }
}
