import Foundation

/// A compact, self-describing binary layout for the state blobs the stages keep in Redis and re-read on
/// every event (a device's attribution state, a conversion's postback plan): the keys and optional
/// members of the value's JSON, without text (no number parsing, no escaping, no sorting of keys), and
/// containers carry their length so a reader skips what it does not ask for. JSON coding of these blobs
/// was about half the scheduler's and attribution-winner's CPU per event. They are written and read by
/// one codec, the stored-state codec (`CompactHandCoded`); `Codable` reads this layout only as
/// `PlainJSON`'s transient form and in the stream envelopes release 0.1.0 wrote (`CompactDecoder`).
///
/// Layout: magic `0xF5` (never the first byte of JSON or of UTF-8 text, and not
/// `CompactHeldPostback.magic`), the version byte, then one value:
///
/// | tag | value |
/// |---|---|
/// | `0x00` | nil |
/// | `0x01`, `0x02` | false, true |
/// | `0x03` | signed integer, zigzag varint |
/// | `0x04` | unsigned integer, varint |
/// | `0x05` | Double, 8 bytes little-endian |
/// | `0x06` | String: varint byte count, UTF-8 |
/// | `0x07` | array: 4-byte little-endian byte count, then its values |
/// | `0x08` | keyed container: 4-byte little-endian byte count, then (key, value) pairs |
/// | `0x09` | Decimal (revenue): its exact text, as a String |
///
/// A key: the varint `2n + 1` for key number `n` of `CompactKeys`, else the varint `2 × byte count`,
/// then the UTF-8 (how `PlainJSON` writes every key: its form is read at once, never stored).
///
/// One format per stored thing: version 2 is the only one read. The version byte is there so that a
/// later release can add a reader for a new layout deliberately; bytes of any other version, and JSON
/// where a compact form is stored, are refused as corrupt (0.x data from before release 0.1.0 is not
/// read; docs/operating/upgrading.md).
public enum CompactCoding {
    public static let magic: UInt8 = 0xF5
    /// The version written, and the only one read.
    public static let version: UInt8 = 2
    /// The key table (`CompactKeys`): key number `n` is `keyNames[n]` (`attribution catalog --json`).
    public static var keyNames: [String] { CompactKeys.names.map { $0.description } }

    enum Tag {
        static let null: UInt8 = 0x00
        static let falseValue: UInt8 = 0x01
        static let trueValue: UInt8 = 0x02
        static let signed: UInt8 = 0x03
        static let unsigned: UInt8 = 0x04
        static let double: UInt8 = 0x05
        static let string: UInt8 = 0x06
        static let array: UInt8 = 0x07
        static let keyed: UInt8 = 0x08
        static let decimal: UInt8 = 0x09
    }

    /// The byte-level writers the stored-state codec (`CompactWriter`) and `PlainJSON` share.

    /// An integer with its tag: `signed` as a zigzag varint (small negatives stay short), `unsigned` as a varint.
    static func appendInteger(_ value: Int64, to bytes: inout [UInt8]) {
        bytes.append(Tag.signed)
        CompactHeldPostback.appendVarint(UInt64(bitPattern: (value << 1) ^ (value >> 63)), to: &bytes)
    }

    static func appendInteger(_ value: UInt64, to bytes: inout [UInt8]) {
        bytes.append(Tag.unsigned)
        CompactHeldPostback.appendVarint(value, to: &bytes)
    }

    /// Text without a tag (a key, or a string's or a decimal's text after its tag): its UTF-8 byte
    /// count as a varint, then the bytes.
    static func appendText(_ utf8: some Collection<UInt8>, to bytes: inout [UInt8]) {
        CompactHeldPostback.appendVarint(UInt64(utf8.count), to: &bytes)
        bytes.append(contentsOf: utf8)
    }

    /// A key as text, without consulting `CompactKeys` (see the layout).
    static func appendTextKey(_ utf8: some Collection<UInt8>, to bytes: inout [UInt8]) {
        CompactHeldPostback.appendVarint(UInt64(utf8.count) << 1, to: &bytes)
        bytes.append(contentsOf: utf8)
    }

    /// A key: its number in `CompactKeys`, else its text (see the layout).
    static func appendKey(_ utf8: UnsafeBufferPointer<UInt8>, to bytes: inout [UInt8]) {
        if let number = CompactKeys.number(of: utf8) {
            CompactHeldPostback.appendVarint(UInt64(number) << 1 | 1, to: &bytes)
        } else {
            CompactHeldPostback.appendVarint(UInt64(utf8.count) << 1, to: &bytes)
            bytes.append(contentsOf: utf8)
        }
    }

    /// Whether two keys' UTF-8 are the same.
    static func same(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        a.count == b.count && (a.count == 0 || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0)
    }

    /// A container's tag and a placeholder for its 4-byte little-endian byte count; where the count goes.
    static func openContainer(_ tag: UInt8, in bytes: inout [UInt8]) -> Int {
        bytes.append(tag)
        bytes.append(contentsOf: [0, 0, 0, 0] as [UInt8])
        return bytes.count - 4
    }

    /// Fills in the byte count of the container whose placeholder is at `placeholder`.
    static func closeContainer(at placeholder: Int, in bytes: inout [UInt8]) {
        let count = UInt32(bytes.count - placeholder - 4)
        for index in 0..<4 { bytes[placeholder + index] = UInt8(truncatingIfNeeded: count >> (8 * index)) }
    }

    /// Whether `bytes` start as the compact form does.
    public static func isCompact(_ bytes: some Collection<UInt8>) -> Bool { bytes.first == magic }

    /// Compact `bytes` read through `T`'s `Codable` conformance (any key order, defaults, damage
    /// reported): the form `PlainJSON` makes of plain JSON for an instant, and the stream envelopes
    /// release 0.1.0 wrote, which a stage may still find on a stream after an upgrade. Stored state
    /// is never read this way (`CompactHandCoded`).
    static func decodeByCodable<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        return try bytes.withUnsafeBufferPointer { buffer in
            guard buffer.count >= 2, buffer[1] == version else {
                throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "unknown compact coding version"))
            }
            let decoder = CompactDecoder(buffer: buffer, position: 2)
            let value = try decoder.decodeValue(T.self)
            guard try decoder.end(ofValueAt: 2) == buffer.count else {
                throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "trailing bytes"))
            }
            return value
        }
    }
}
