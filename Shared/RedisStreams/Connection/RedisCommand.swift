/// One Redis command as its argument vector; arguments are bytes so payloads stay binary safe.
public struct RedisCommand: Sendable, Equatable {
    /// The command name followed by its arguments.
    public var arguments: [[UInt8]]

    /// A command from UTF-8 text arguments: `RedisCommand("SET", key, value)`.
    public init(_ arguments: String...) {
        self.init(arguments)
    }

    /// A command from an array of UTF-8 text arguments.
    public init(_ arguments: [String]) {
        self.arguments = arguments.map { Array($0.utf8) }
    }

    /// A command from raw byte arguments.
    public init(bytes: [[UInt8]]) {
        self.arguments = bytes
    }

    /// SET with an expiry: `value` (binary safe) under `key` for `milliseconds`.
    public static func set(_ key: String, _ value: [UInt8], expiringAfter milliseconds: Int64) -> RedisCommand {
        RedisCommand(bytes: [Array("SET".utf8), Array(key.utf8), value, Array("PX".utf8), Array(String(milliseconds).utf8)])
    }

    /// This command with one more binary argument at the end.
    public func appending(_ bytes: [UInt8]) -> RedisCommand {
        var copy = self
        copy.arguments.append(bytes)
        return copy
    }

    /// This command with one more text argument at the end.
    public func appending(_ argument: String) -> RedisCommand {
        self.appending(Array(argument.utf8))
    }

    /// The command name in upper case: for logs and error messages, and for what routing and write
    /// coalescing look up per command. An ASCII name (every command's) is upper-cased byte by byte into
    /// a small string, without the Unicode case mapping of `uppercased()` (a few per cent of the
    /// scheduler's CPU, which asks for every command of its transactions).
    public var name: String {
        guard let first = self.arguments.first else { return "" }
        guard first.allSatisfy({ $0 < 0x80 }) else { return String(decoding: first, as: UTF8.self).uppercased() }
        return String(unsafeUninitializedCapacity: first.count) { buffer in
            for (index, byte) in first.enumerated() { buffer[index] = byte >= 0x61 && byte <= 0x7A ? byte - 0x20 : byte }
            return first.count
        }
    }
}

extension RedisCommand {
    /// What a pipeline leaves of a WATCH on its connection: true when its last WATCH, EXEC, DISCARD or
    /// UNWATCH is a WATCH, false when one of the others, nil with none of them. Byte comparisons, no
    /// string per command: a stage's commit pipeline has hundreds.
    static func watchEffect(of commands: [RedisCommand]) -> Bool? {
        var effect: Bool?
        for command in commands {
            guard let name = command.arguments.first, (4...7).contains(name.count) else { continue }
            if Self.named(name, "WATCH") {
                effect = true
            } else if Self.named(name, "EXEC") || Self.named(name, "DISCARD") || Self.named(name, "UNWATCH") {
                effect = false
            }
        }
        return effect
    }

    /// Whether `name` is `upper`, in any case (ASCII).
    private static func named(_ name: [UInt8], _ upper: StaticString) -> Bool {
        guard name.count == upper.utf8CodeUnitCount else { return false }
        return upper.withUTF8Buffer { wanted in
            zip(name, wanted).allSatisfy { ($0 >= 0x61 && $0 <= 0x7A ? $0 - 0x20 : $0) == $1 }
        }
    }
}

extension RedisCommand: CustomStringConvertible {
    /// The arguments as text, long or binary ones shortened, so logs never carry whole payloads.
    public var description: String {
        self.arguments.map { argument in
            guard argument.count <= 64, let text = String(validating: argument, as: UTF8.self) else {
                return "<\(argument.count) bytes>"
            }
            return text
        }.joined(separator: " ")
    }
}
