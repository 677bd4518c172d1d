import Foundation
import RedisStreams

/// A configuration value that could not be used, named by its key so the operator knows what to fix.
public struct ConfigurationError: Error, CustomStringConvertible {
    public let key: String
    public let problem: String
    public var description: String { "configuration \(key): \(problem)" }

    public init(key: String, problem: String) {
        self.key = key
        self.problem = problem
    }
}

/// Reads configuration keys from the environment, once, at start. Only catalogued keys can be read, and
/// each brings its own type, default and range.
public struct ServiceEnvironment: Sendable {
    let values: [String: String]

    public init(_ values: [String: String] = ProcessInfo.processInfo.environment) {
        self.values = values
    }

    /// The key's value; its default when unset or empty.
    public func value<Value>(_ key: ConfigurationKey.Typed<Value>) throws(ConfigurationError) -> Value {
        guard let text = values[key.name], !text.isEmpty else {
            guard let fallback = key.fallback else { throw ConfigurationError(key: key.name, problem: "is required") }
            return fallback()
        }
        do {
            return try key.read(text)
        } catch {
            throw ConfigurationError(key: key.name, problem: error.problem)
        }
    }

    /// A secret set in `key` or read from the file `file` names (as Docker secrets are given): exactly one of
    /// the two, and the file's text (less a trailing newline) is checked as `key`'s value would be.
    public func secret(
        _ key: ConfigurationKey.Typed<String?>, orFile file: ConfigurationKey.Typed<String?>
    ) throws(ConfigurationError) -> String {
        let direct = try value(key)
        guard let path = try value(file) else {
            guard let direct else { throw ConfigurationError(key: key.name, problem: "is required (or \(file.name))") }
            return direct
        }
        guard direct == nil else { throw ConfigurationError(key: file.name, problem: "set it or \(key.name), not both") }
        guard let text = RedisConfiguration.password(fromFile: path) else {
            throw ConfigurationError(key: file.name, problem: "cannot read \(path)")
        }
        do {
            return try key.read(text) ?? ""
        } catch {
            throw ConfigurationError(key: file.name, problem: error.problem)
        }
    }
}
