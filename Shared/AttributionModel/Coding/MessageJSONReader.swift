/// Reads the JSON the message writers write (`MessageJSONWriter`: no white space, keys sorted, text of
/// printable ASCII without escapes, integers), straight into the model's values: the decoding half of
/// the message codec, where `PlainJSON` (JSON into the compact form, then the type's `Codable`
/// decoder) cost about three times as much per message on every stage.
///
/// It is strict on purpose. Anything else (white space, an escape, a number with a fraction, a null,
/// a key the type does not write, a key twice, a missing member, a value out of range) throws `Unread`
/// and `Envelope.decode` reads the bytes the general way (`PlainJSON`, then JSONDecoder), whose answer
/// stands. So it never accepts what JSONDecoder refuses nor reads anything differently:
/// `MessageJSONTests` holds its values to JSONDecoder's for every message type and for every member
/// dropped, nulled, retyped, repeated or added.
struct MessageJSONReader {
    /// Not damage, necessarily: only JSON this reader leaves to the general one.
    struct Unread: Error {}

    let json: UnsafeBufferPointer<UInt8>
    var position: Int

    init(json: UnsafeBufferPointer<UInt8>, position: Int = 0) {
        self.json = json
        self.position = position
    }

    var atEnd: Bool { position == json.count }

    /// A member's key, compared with the names a type writes (`case "time":` in a `switch`).
    struct Key {
        let text: UnsafeBufferPointer<UInt8>.SubSequence

        static func ~= (name: StaticString, key: Key) -> Bool {
            name.utf8CodeUnitCount == key.text.count && name.withUTF8Buffer { key.text.elementsEqual($0) }
        }
    }

    /// An object, each member handed to `member` with the reader at its value.
    mutating func object(_ member: (inout MessageJSONReader, Key) throws -> Void) throws {
        try expect(UInt8(ascii: "{"))
        if take(UInt8(ascii: "}")) { return }
        repeat {
            let key = Key(text: json[try plainText()])
            try expect(UInt8(ascii: ":"))
            try member(&self, key)
        } while take(UInt8(ascii: ","))
        try expect(UInt8(ascii: "}"))
    }

    /// An array, each element read by `element`.
    mutating func array<T>(_ element: (inout MessageJSONReader) throws -> T) throws -> [T] {
        try expect(UInt8(ascii: "["))
        var elements: [T] = []
        if take(UInt8(ascii: "]")) { return elements }
        repeat { elements.append(try element(&self)) } while take(UInt8(ascii: ","))
        try expect(UInt8(ascii: "]"))
        return elements
    }

    mutating func string() throws -> String {
        String(decoding: json[try plainText()], as: UTF8.self)
    }

    /// An enum spelled by its raw value.
    mutating func value<T: RawRepresentable>(_: T.Type = T.self) throws -> T where T.RawValue == String {
        guard let value = T(rawValue: try string()) else { throw Unread() }
        return value
    }

    mutating func bool() throws -> Bool {
        if literal("true") { return true }
        if literal("false") { return false }
        throw Unread()
    }

    /// `-?(0|[1-9][0-9]*)`, not followed by a fraction or an exponent, within `T`'s range.
    mutating func integer<T: FixedWidthInteger>(_: T.Type = T.self) throws -> T {
        let negative = take(UInt8(ascii: "-"))
        let start = position
        var magnitude: UInt64 = 0
        while position < json.count, json[position] &- UInt8(ascii: "0") < 10 {
            let (times, overflowed) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, carried) = times.addingReportingOverflow(UInt64(json[position] &- UInt8(ascii: "0")))
            guard !overflowed, !carried else { throw Unread() }
            magnitude = sum
            position += 1
        }
        let digits = position - start
        guard digits > 0, digits == 1 || json[start] != UInt8(ascii: "0") else { throw Unread() }
        if position < json.count, [UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E")].contains(json[position]) {
            throw Unread()
        }
        // -0 is left to JSONDecoder, as PlainJSON leaves it.
        if negative {
            guard magnitude > 0, magnitude <= UInt64(Int64.max) + 1,
                let value = T(exactly: magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude))
            else { throw Unread() }
            return value
        }
        guard let value = T(exactly: magnitude) else { throw Unread() }
        return value
    }

    /// Passes over one value without reading it, for a member read later (the envelope's body comes
    /// before its type). Text with an escape is left to the general reader.
    mutating func skipValue() throws -> Range<Int> {
        let start = position
        var depth = 0
        repeat {
            guard position < json.count else { throw Unread() }
            switch json[position] {
            case UInt8(ascii: "\""): _ = try plainText()
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                position += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                guard depth > 0 else { throw Unread() }
                depth -= 1
                position += 1
            default: position += 1
            }
        } while depth > 0 || (position < json.count && ![UInt8(ascii: ","), UInt8(ascii: "}")].contains(json[position]))
        return start..<position
    }

    /// A member's value, stored once: a key seen twice is left to JSONDecoder, whose choice between the
    /// two is its own.
    static func once<T>(_ slot: inout T?, _ value: T) throws {
        guard slot == nil else { throw Unread() }
        slot = value
    }

    // MARK: - Bytes

    /// A string's contents: printable ASCII without escapes.
    mutating func plainText() throws -> Range<Int> {
        try expect(UInt8(ascii: "\""))
        let start = position
        while position < json.count {
            let byte = json[position]
            if byte == UInt8(ascii: "\"") {
                position += 1
                return start..<(position - 1)
            }
            guard byte >= 0x20, byte < 0x7F, byte != UInt8(ascii: "\\") else { throw Unread() }
            position += 1
        }
        throw Unread()
    }

    private mutating func take(_ byte: UInt8) -> Bool {
        guard position < json.count, json[position] == byte else { return false }
        position += 1
        return true
    }

    private mutating func expect(_ byte: UInt8) throws {
        guard take(byte) else { throw Unread() }
    }

    mutating func literal(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard position + count <= json.count,
            word.withUTF8Buffer({ json[position..<(position + count)].elementsEqual($0) })
        else { return false }
        position += count
        return true
    }
}
