import Foundation

@testable import AttributionModel

/// Release 0.1.0's writer of `CompactCoding`'s layout through `Codable`, kept in the tests only: the
/// reference the stored-state codec is held to (the same bytes for the same value), the writer of the
/// upgrade fixtures, and a maker of compact bytes for the `Codable` reader (`CompactDecoder`), which
/// still reads `PlainJSON`'s transient form and 0.1.0's stream envelopes.
extension CompactCoding {
    static func encodeByCodable<T: Encodable>(_ value: T) throws -> [UInt8] {
        let encoder = CompactEncoder()
        encoder.bytes.append(magic)
        encoder.bytes.append(version)
        try encoder.encodeValue(value)
        return encoder.bytes
    }
}

/// Writes values in `CompactCoding`'s layout into one buffer, in the order `encode(to:)` writes them.
///
/// A container's byte count is patched in once the value that asked for it is written (`encodeValue`
/// returns): Codable never says when a container is finished, but a container belongs to the
/// `encode(to:)` call that created it. For the same reason a container cannot open another one beside
/// its own entries (`nestedContainer`, `superEncoder`): no type of the model does, and one that did
/// would be caught by `CompactCodingTests`' round trips.
final class CompactEncoder: Encoder {
    typealias Tag = CompactCoding.Tag

    var bytes: [UInt8] = []
    /// Offsets of the byte-count placeholders of the containers still open, innermost last.
    private var open: [Int] = []
    /// Where the value being written starts: a second container request for it reuses the first.
    private var valueStart = 0

    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init() {}

    func encodeValue<T: Encodable>(_ value: T) throws {
        // Decimal's own Codable form is a struct of its internals (JSONEncoder special-cases it too).
        if T.self == Decimal.self, let decimal = value as? Decimal {
            write(decimal.description, tag: Tag.decimal)
            return
        }
        let mark = open.count
        let outer = valueStart
        valueStart = bytes.count
        defer { valueStart = outer }
        try value.encode(to: self)
        // A value that asked for no container at all: JSONEncoder writes `{}` for it.
        if bytes.count == valueStart { openContainer(Tag.keyed) }
        while open.count > mark { close(open.removeLast()) }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        openContainer(Tag.keyed)
        return KeyedEncodingContainer(KeyedContainer<Key>(encoder: self))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        openContainer(Tag.array)
        return UnkeyedContainer(encoder: self)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { SingleValueContainer(encoder: self) }

    private func openContainer(_ tag: UInt8) {
        if open.last == valueStart + 1 { return }  // the same value asked again
        open.append(CompactCoding.openContainer(tag, in: &bytes))
    }

    private func close(_ placeholder: Int) { CompactCoding.closeContainer(at: placeholder, in: &bytes) }

    // MARK: - Values

    func writeKey(_ key: some CodingKey) {
        var name = key.stringValue
        name.withUTF8 { CompactCoding.appendKey($0, to: &bytes) }
    }

    func writeNil() { bytes.append(Tag.null) }

    func write(_ value: Bool) { bytes.append(value ? Tag.trueValue : Tag.falseValue) }

    func write(_ value: String, tag: UInt8 = Tag.string) {
        bytes.append(tag)
        appendText(value)
    }

    func write(_ value: Double) {
        bytes.append(Tag.double)
        let pattern = value.bitPattern
        for index in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: pattern >> (8 * UInt64(index)))) }
    }

    func write<T: FixedWidthInteger>(_ value: T) {
        if T.isSigned {
            CompactCoding.appendInteger(Int64(value), to: &bytes)
        } else {
            CompactCoding.appendInteger(UInt64(value), to: &bytes)
        }
    }

    /// A string's or a decimal's text.
    private func appendText(_ text: String) {
        var text = text
        text.withUTF8 { CompactCoding.appendText($0, to: &bytes) }
    }

    private static func unsupported() -> Never {
        preconditionFailure("CompactCoding does not write nested containers or super encoders")
    }

    // MARK: - Containers

    struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let encoder: CompactEncoder
        var codingPath: [any CodingKey] { [] }

        mutating func encodeNil(forKey key: Key) throws {
            encoder.writeKey(key)
            encoder.writeNil()
        }
        mutating func encode(_ value: Bool, forKey key: Key) throws {
            encoder.writeKey(key)
            encoder.write(value)
        }
        mutating func encode(_ value: String, forKey key: Key) throws {
            encoder.writeKey(key)
            encoder.write(value)
        }
        mutating func encode(_ value: Double, forKey key: Key) throws {
            encoder.writeKey(key)
            encoder.write(value)
        }
        mutating func encode(_ value: Float, forKey key: Key) throws {
            encoder.writeKey(key)
            encoder.write(Double(value))
        }
        mutating func encode(_ value: Int, forKey key: Key) throws { integer(value, key) }
        mutating func encode(_ value: Int8, forKey key: Key) throws { integer(value, key) }
        mutating func encode(_ value: Int16, forKey key: Key) throws { integer(value, key) }
        mutating func encode(_ value: Int32, forKey key: Key) throws { integer(value, key) }
        mutating func encode(_ value: Int64, forKey key: Key) throws { integer(value, key) }
        mutating func encode(_ value: UInt, forKey key: Key) throws { integer(value, key) }
        mutating func encode(_ value: UInt8, forKey key: Key) throws { integer(value, key) }
        mutating func encode(_ value: UInt16, forKey key: Key) throws { integer(value, key) }
        mutating func encode(_ value: UInt32, forKey key: Key) throws { integer(value, key) }
        mutating func encode(_ value: UInt64, forKey key: Key) throws { integer(value, key) }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            encoder.writeKey(key)
            try encoder.encodeValue(value)
        }

        private func integer<T: FixedWidthInteger>(_ value: T, _ key: Key) {
            encoder.writeKey(key)
            encoder.write(value)
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
            -> KeyedEncodingContainer<NestedKey>
        { CompactEncoder.unsupported() }
        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            CompactEncoder.unsupported()
        }
        mutating func superEncoder() -> any Encoder { CompactEncoder.unsupported() }
        mutating func superEncoder(forKey key: Key) -> any Encoder { CompactEncoder.unsupported() }
    }

    struct UnkeyedContainer: UnkeyedEncodingContainer {
        let encoder: CompactEncoder
        var codingPath: [any CodingKey] { [] }
        var count = 0

        mutating func encodeNil() throws {
            encoder.writeNil()
            count += 1
        }
        mutating func encode(_ value: Bool) throws {
            encoder.write(value)
            count += 1
        }
        mutating func encode(_ value: String) throws {
            encoder.write(value)
            count += 1
        }
        mutating func encode(_ value: Double) throws {
            encoder.write(value)
            count += 1
        }
        mutating func encode(_ value: Float) throws {
            encoder.write(Double(value))
            count += 1
        }
        mutating func encode(_ value: Int) throws { integer(value) }
        mutating func encode(_ value: Int8) throws { integer(value) }
        mutating func encode(_ value: Int16) throws { integer(value) }
        mutating func encode(_ value: Int32) throws { integer(value) }
        mutating func encode(_ value: Int64) throws { integer(value) }
        mutating func encode(_ value: UInt) throws { integer(value) }
        mutating func encode(_ value: UInt8) throws { integer(value) }
        mutating func encode(_ value: UInt16) throws { integer(value) }
        mutating func encode(_ value: UInt32) throws { integer(value) }
        mutating func encode(_ value: UInt64) throws { integer(value) }
        mutating func encode<T: Encodable>(_ value: T) throws {
            try encoder.encodeValue(value)
            count += 1
        }

        private mutating func integer<T: FixedWidthInteger>(_ value: T) {
            encoder.write(value)
            count += 1
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
            -> KeyedEncodingContainer<NestedKey>
        { CompactEncoder.unsupported() }
        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { CompactEncoder.unsupported() }
        mutating func superEncoder() -> any Encoder { CompactEncoder.unsupported() }
    }

    struct SingleValueContainer: SingleValueEncodingContainer {
        let encoder: CompactEncoder
        var codingPath: [any CodingKey] { [] }

        mutating func encodeNil() throws { encoder.writeNil() }
        mutating func encode(_ value: Bool) throws { encoder.write(value) }
        mutating func encode(_ value: String) throws { encoder.write(value) }
        mutating func encode(_ value: Double) throws { encoder.write(value) }
        mutating func encode(_ value: Float) throws { encoder.write(Double(value)) }
        mutating func encode(_ value: Int) throws { encoder.write(value) }
        mutating func encode(_ value: Int8) throws { encoder.write(value) }
        mutating func encode(_ value: Int16) throws { encoder.write(value) }
        mutating func encode(_ value: Int32) throws { encoder.write(value) }
        mutating func encode(_ value: Int64) throws { encoder.write(value) }
        mutating func encode(_ value: UInt) throws { encoder.write(value) }
        mutating func encode(_ value: UInt8) throws { encoder.write(value) }
        mutating func encode(_ value: UInt16) throws { encoder.write(value) }
        mutating func encode(_ value: UInt32) throws { encoder.write(value) }
        mutating func encode(_ value: UInt64) throws { encoder.write(value) }
        mutating func encode<T: Encodable>(_ value: T) throws { try encoder.encodeValue(value) }
    }
}
