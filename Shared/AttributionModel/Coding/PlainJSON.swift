import Foundation

/// Reads plain JSON (a JWS header, an impression's signed payload, an event in a request body)
/// without JSONDecoder, which was about a tenth of the verifier's CPU per impression and a quarter of
/// ingest's per batched event. The JSON is rewritten into `CompactCoding`'s form and decoded
/// by the type's own `init(from:)`, so the same keys, types and checks apply.
///
/// Only the plainest JSON takes this path: objects and arrays (at most 16 deep) of strings (printable
/// ASCII, no escapes), integers (no fraction, no exponent, no leading zero), booleans and nulls, each
/// key once per object. Anything else (escapes, other numbers, non-ASCII text, a repeated key, invalid
/// JSON) and any value the type's decoder refuses goes to JSONDecoder, whose answer stands: this can
/// never accept what JSONDecoder would refuse, nor decode anything differently, and every refusal
/// carries JSONDecoder's own error. `PlainJSONTests` holds the two side by side.
public enum PlainJSON {
    /// `type` decoded from `json`: through the compact form when the JSON is plain, else by the
    /// pipeline's shared JSONDecoder (one made per call cost as much as the decoding).
    public static func decode<T: Decodable>(_ type: T.Type, from json: Data) throws -> T {
        if let compact = compactForm(of: json), let value = try? CompactCoding.decodeByCodable(T.self, from: compact) {
            return value
        }
        return try JSONCoding.decoder.decode(T.self, from: json)
    }

    /// The compact form of plain JSON, or nil for anything this reader leaves to JSONDecoder.
    public static func compactForm(of json: Data) -> [UInt8]? {
        json.withUnsafeBytes { compactForm(of: $0.bindMemory(to: UInt8.self)) }
    }

    static func compactForm(of json: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        var reader = Reader(json: json)
        // Keys as text: the form is read at once and never stored, so the key table gains nothing here.
        var out: [UInt8] = [CompactCoding.magic, CompactCoding.version]
        out.reserveCapacity(json.count + 16)
        reader.skipSpace()
        guard reader.value(into: &out, depth: 0) else { return nil }
        reader.skipSpace()
        return reader.atEnd ? out : nil
    }

    /// Deeper than this is left to JSONDecoder (and keeps a hostile body from recursing far here).
    static let maximumDepth = 16

    private struct Reader {
        let json: UnsafeBufferPointer<UInt8>
        var position = 0

        var atEnd: Bool { position == json.count }

        mutating func skipSpace() {
            while position < json.count, [0x20, 0x09, 0x0A, 0x0D].contains(json[position]) { position += 1 }
        }

        mutating func take(_ byte: UInt8) -> Bool {
            guard position < json.count, json[position] == byte else { return false }
            position += 1
            return true
        }

        /// A string's contents if it is printable ASCII without escapes (the message codec's scanner).
        mutating func plainString() -> Range<Int>? {
            var scanner = MessageJSONReader(json: json, position: position)
            guard let text = try? scanner.plainText() else { return nil }
            position = scanner.position
            return text
        }

        /// One value, appended in the compact form.
        mutating func value(into out: inout [UInt8], depth: Int) -> Bool {
            guard position < json.count else { return false }
            switch json[position] {
            case UInt8(ascii: "{"): return depth < PlainJSON.maximumDepth && object(into: &out, depth: depth + 1)
            case UInt8(ascii: "["): return depth < PlainJSON.maximumDepth && array(into: &out, depth: depth + 1)
            case UInt8(ascii: "\""):
                guard let text = plainString() else { return false }
                out.append(CompactCoding.Tag.string)
                CompactCoding.appendText(json[text], to: &out)
                return true
            case UInt8(ascii: "t"):
                guard literal("true") else { return false }
                out.append(CompactCoding.Tag.trueValue)
                return true
            case UInt8(ascii: "f"):
                guard literal("false") else { return false }
                out.append(CompactCoding.Tag.falseValue)
                return true
            case UInt8(ascii: "n"):
                guard literal("null") else { return false }
                out.append(CompactCoding.Tag.null)
                return true
            default:
                return integer(into: &out)
            }
        }

        /// `{…}` as a keyed container (key–value pairs, each key once).
        mutating func object(into out: inout [UInt8], depth: Int) -> Bool {
            var keys: [Range<Int>] = []
            return container(CompactCoding.Tag.keyed, closedBy: UInt8(ascii: "}"), into: &out) { reader, out in
                guard let key = reader.plainString() else { return false }
                // A repeated key: JSONDecoder's choice between them is its own; leave it to it.
                guard !keys.contains(where: { reader.json[$0].elementsEqual(reader.json[key]) }) else { return false }
                keys.append(key)
                reader.skipSpace()
                guard reader.take(UInt8(ascii: ":")) else { return false }
                reader.skipSpace()
                CompactCoding.appendTextKey(reader.json[key], to: &out)
                return reader.value(into: &out, depth: depth)
            }
        }

        /// `[…]` as an array.
        mutating func array(into out: inout [UInt8], depth: Int) -> Bool {
            container(CompactCoding.Tag.array, closedBy: UInt8(ascii: "]"), into: &out) { reader, out in
                reader.value(into: &out, depth: depth)
            }
        }

        /// The opening byte is at `position`: the container's tag and byte count (filled in at the end),
        /// then its comma-separated members, each written by `member`.
        mutating func container(
            _ tag: UInt8, closedBy close: UInt8, into out: inout [UInt8],
            member: (inout Reader, inout [UInt8]) -> Bool
        ) -> Bool {
            position += 1
            let placeholder = CompactCoding.openContainer(tag, in: &out)
            skipSpace()
            if !take(close) {
                repeat {
                    skipSpace()
                    guard member(&self, &out) else { return false }
                    skipSpace()
                } while take(UInt8(ascii: ","))
                guard take(close) else { return false }
            }
            CompactCoding.closeContainer(at: placeholder, in: &out)
            return true
        }

        mutating func literal(_ word: StaticString) -> Bool {
            var scanner = MessageJSONReader(json: json, position: position)
            guard scanner.literal(word) else { return false }
            position = scanner.position
            return true
        }

        /// `-?(0|[1-9][0-9]*)` within 64 bits, not followed by a fraction or an exponent (the message
        /// codec's scanner; -0, which is 0 to an integer but -0.0 to a Double, is left to JSONDecoder).
        mutating func integer(into out: inout [UInt8]) -> Bool {
            var scanner = MessageJSONReader(json: json, position: position)
            if json[position] == UInt8(ascii: "-") {
                guard let value = try? scanner.integer(Int64.self) else { return false }
                CompactCoding.appendInteger(value, to: &out)
            } else {
                guard let value = try? scanner.integer(UInt64.self) else { return false }
                CompactCoding.appendInteger(value, to: &out)
            }
            position = scanner.position
            return true
        }
    }
}
