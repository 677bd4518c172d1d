/// Writes a message's JSON directly: the bytes `JSONCoding.encoder` writes for the same value (keys in
/// its sorted order, optional members left out when nil, slashes unescaped), without JSONEncoder's tree
/// of boxed values and its sorting of every object's keys. The encoding half of the message codec.
///
/// Each type lists its keys in sorted order by hand (`MessageJSONTests` compares every message type's
/// bytes with JSONEncoder's). Text JSONEncoder would escape, or that is not ASCII, sets `failed`, and
/// the caller encodes the message the general way.
struct MessageJSONWriter {
    var bytes: [UInt8] = []
    /// A value needed what this writer leaves to JSONEncoder.
    var failed = false
    /// No member yet in the object being written: no comma before the next key.
    private var first = true

    init(capacity: Int) { bytes.reserveCapacity(capacity) }

    /// An object whose members `body` writes.
    mutating func object(_ body: (inout MessageJSONWriter) -> Void) {
        bytes.append(UInt8(ascii: "{"))
        first = true
        body(&self)
        bytes.append(UInt8(ascii: "}"))
        first = false
    }

    mutating func key(_ name: StaticString) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
    }

    mutating func string(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            guard byte >= 0x20, byte < 0x7F, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") else {
                failed = true
                return
            }
            bytes.append(byte)
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Digits written in place, without a `String` made for each number.
    mutating func integer(_ value: some BinaryInteger) {
        guard var magnitude = UInt64(exactly: value.magnitude) else {
            bytes.append(contentsOf: String(value).utf8)
            return
        }
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        let start = bytes.count
        repeat {
            bytes.append(UInt8(ascii: "0") &+ UInt8(magnitude % 10))
            magnitude /= 10
        } while magnitude > 0
        bytes[start...].reverse()
    }

    mutating func bool(_ value: Bool) {
        (value ? "true" as StaticString : "false").withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    // MARK: - Members: the key, then the value

    mutating func field(_ name: StaticString, _ value: String) {
        key(name)
        string(value)
    }
    mutating func field(_ name: StaticString, _ value: some BinaryInteger) {
        key(name)
        integer(value)
    }
    mutating func field(_ name: StaticString, _ value: Bool) {
        key(name)
        bool(value)
    }
    mutating func field<T: RawRepresentable>(_ name: StaticString, _ value: T) where T.RawValue == String {
        field(name, value.rawValue)
    }
    mutating func field(_ name: StaticString, _ value: some MessageJSONCoded) {
        key(name)
        value.write(to: &self)
    }
    mutating func field<T: MessageJSONCoded>(_ name: StaticString, _ values: [T]) {
        key(name)
        bytes.append(UInt8(ascii: "["))
        for (index, value) in values.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            value.write(to: &self)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    // `encodeIfPresent`: nothing at all for nil.
    mutating func field(_ name: StaticString, ifPresent value: String?) {
        if let value { field(name, value) }
    }
    mutating func field(_ name: StaticString, ifPresent value: (some BinaryInteger)?) {
        if let value { field(name, value) }
    }
    mutating func field(_ name: StaticString, ifPresent value: Bool?) {
        if let value { field(name, value) }
    }
    mutating func field<T: RawRepresentable>(_ name: StaticString, ifPresent value: T?) where T.RawValue == String {
        if let value { field(name, value.rawValue) }
    }
    mutating func field(_ name: StaticString, ifPresent value: (some MessageJSONCoded)?) {
        if let value { field(name, value) }
    }
}

/// A value the message codec writes and reads by hand (`MessageJSONWriter`, `MessageJSONReader`).
protocol MessageJSONCoded {
    /// The value's JSON; sets the writer's `failed` for a value it leaves to JSONEncoder.
    func write(to writer: inout MessageJSONWriter)
    /// Throws `MessageJSONReader.Unread` for anything but what `write` writes.
    init(json reader: inout MessageJSONReader) throws
}
