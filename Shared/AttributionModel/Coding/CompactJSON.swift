/// The JSON text of a value's compact form: what `JSONCoding.encoder` writes for the same value (keys
/// sorted, the same number forms, slashes unescaped), without JSONEncoder, which builds a tree of boxed
/// values and sorts every object's keys as strings: about 15 µs of the 27 a `postback.due` message
/// took to encode and decode (`attribution-bench coding`). The compact form carries the same keys and
/// the same optional members as the `Codable` form's JSON, so its text is that JSON's.
///
/// Only plain values take this path: strings of printable ASCII, integers, booleans, nulls, decimals; a double, text that JSONEncoder would escape, or bytes that are not the compact
/// form return nil, and the caller uses JSONEncoder. `CompactJSONTests` holds the bytes to JSONEncoder's
/// for every message type.
enum CompactJSON {
    /// The key table's names as bytes, made once.
    static let keys: [[UInt8]] = CompactKeys.names.map { $0.withUTF8Buffer { Array($0) } }

    static func json(_ compact: [UInt8]) -> [UInt8]? {
        compact.withUnsafeBufferPointer { buffer -> [UInt8]? in
            guard buffer.count > 2, buffer[0] == CompactCoding.magic, buffer[1] == CompactCoding.version else { return nil }
            var reader = Reader(bytes: buffer, position: 2)
            var out: [UInt8] = []
            out.reserveCapacity(buffer.count * 2 + 64)
            guard reader.value(into: &out), reader.position == buffer.count else { return nil }
            return out
        }
    }

    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var position: Int

        mutating func byte() -> UInt8? {
            guard position < bytes.count else { return nil }
            defer { position += 1 }
            return bytes[position]
        }

        mutating func varint() -> UInt64? {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while let byte = byte() {
                guard shift < 64 else { return nil }
                value |= UInt64(byte & 0x7F) << shift
                if byte & 0x80 == 0 { return value }
                shift += 7
            }
            return nil
        }

        /// A range of `count` bytes from here.
        mutating func take(_ count: Int) -> Range<Int>? {
            guard count >= 0, count <= bytes.count - position else { return nil }
            defer { position += count }
            return position..<(position + count)
        }

        /// A container's 4-byte little-endian byte count: where it ends.
        mutating func containerEnd() -> Int? {
            guard let range = take(4) else { return nil }
            var count = 0
            for (shift, index) in range.enumerated() { count |= Int(bytes[index]) << (8 * shift) }
            return count <= bytes.count - position ? position + count : nil
        }

        /// One value as JSON.
        mutating func value(into out: inout [UInt8]) -> Bool {
            switch byte() {
            case CompactCoding.Tag.null?: out.append(contentsOf: "null".utf8)
            case CompactCoding.Tag.falseValue?: out.append(contentsOf: "false".utf8)
            case CompactCoding.Tag.trueValue?: out.append(contentsOf: "true".utf8)
            case CompactCoding.Tag.signed?:
                guard let zigzag = varint() else { return false }
                out.append(contentsOf: String(Int64(bitPattern: zigzag >> 1) ^ -Int64(bitPattern: zigzag & 1)).utf8)
            case CompactCoding.Tag.unsigned?:
                guard let value = varint() else { return false }
                out.append(contentsOf: String(value).utf8)
            case CompactCoding.Tag.string?:
                guard let count = varint(), let text = take(Int(clamping: count)) else { return false }
                return string(text, into: &out)
            case CompactCoding.Tag.decimal?:
                // JSONEncoder writes a Decimal as a number: its text, unquoted.
                guard let count = varint(), let text = take(Int(clamping: count)), !text.isEmpty else { return false }
                out.append(contentsOf: bytes[text])
            case CompactCoding.Tag.array?:
                guard let end = containerEnd() else { return false }
                out.append(UInt8(ascii: "["))
                var first = true
                while position < end {
                    if !first { out.append(UInt8(ascii: ",")) }
                    first = false
                    guard value(into: &out) else { return false }
                }
                guard position == end else { return false }
                out.append(UInt8(ascii: "]"))
            case CompactCoding.Tag.keyed?:
                return object(into: &out)
            default:
                return false  // a double (JSONEncoder's number forms are its own), or not the compact form
            }
            return true
        }

        /// A keyed container: its members written to a scratch buffer each, then joined in key order.
        mutating func object(into out: inout [UInt8]) -> Bool {
            guard let end = containerEnd() else { return false }
            var members: [(key: [UInt8], json: [UInt8])] = []
            while position < end {
                guard let code = varint() else { return false }
                let key: [UInt8]
                if code & 1 == 1 {
                    guard code >> 1 < CompactJSON.keys.count else { return false }
                    key = CompactJSON.keys[Int(code >> 1)]
                } else {
                    guard let text = take(Int(clamping: code >> 1)) else { return false }
                    key = Array(bytes[text])
                }
                var json: [UInt8] = []
                guard value(into: &json) else { return false }
                members.append((key, json))
            }
            guard position == end else { return false }
            members.sort { $0.key.lexicographicallyPrecedes($1.key) }
            out.append(UInt8(ascii: "{"))
            for (index, member) in members.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                guard string(member.key, into: &out) else { return false }
                out.append(UInt8(ascii: ":"))
                out.append(contentsOf: member.json)
            }
            out.append(UInt8(ascii: "}"))
            return true
        }

        func string(_ range: Range<Int>, into out: inout [UInt8]) -> Bool {
            string(bytes[range], into: &out)
        }

        /// A quoted string (`"` and `\` escaped as JSONEncoder does: a postback body in a retry is JSON),
        /// or false for a control character or text that is not ASCII (JSONEncoder's forms are its own).
        func string(_ text: some Collection<UInt8>, into out: inout [UInt8]) -> Bool {
            out.append(UInt8(ascii: "\""))
            for byte in text {
                guard byte >= 0x20, byte < 0x7F else { return false }
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { out.append(UInt8(ascii: "\\")) }
                out.append(byte)
            }
            out.append(UInt8(ascii: "\""))
            return true
        }
    }
}
