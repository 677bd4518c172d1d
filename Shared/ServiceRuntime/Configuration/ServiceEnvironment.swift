import AttributionModel
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

/// Reads configuration keys from the environment, once, at start. Only catalogued keys can be read.
public struct ServiceEnvironment: Sendable {
    let values: [String: String]

    public init(_ values: [String: String] = ProcessInfo.processInfo.environment) {
        self.values = values
    }

    public func string(_ key: ConfigurationKey) -> String? {
        values[key.name].flatMap { $0.isEmpty ? nil : $0 }
    }

    public func required(_ key: ConfigurationKey) throws -> String {
        guard let value = string(key) else { throw ConfigurationError(key: key.name, problem: "is required") }
        return value
    }

    public func int(_ key: ConfigurationKey, default fallback: Int, range: ClosedRange<Int> = 0...Int.max) throws -> Int {
        guard let text = string(key) else { return fallback }
        guard let value = Int(text), range.contains(value) else {
            throw ConfigurationError(key: key.name, problem: "must be an integer in \(range), got \(text)")
        }
        return value
    }

    public func timePolicy() throws -> TimePolicy {
        guard let text = string(.timeScale) else { return .realTime }
        guard let scale = Double(text), scale > 0, scale.isFinite else {
            throw ConfigurationError(key: ConfigurationKey.timeScale.name, problem: "must be a positive number, got \(text)")
        }
        return TimePolicy(scale: scale)
    }

    public func redis() throws -> RedisConfiguration {
        let url = string(.redisURL) ?? ConfigurationKey.redisURL.defaultValue!
        do { return try RedisConfiguration(url: url) } catch {
            throw ConfigurationError(key: ConfigurationKey.redisURL.name, problem: "\(error)")
        }
    }

    public func consumerName() -> String {
        string(.consumerName) ?? "\(ProcessInfo.processInfo.hostName)-\(ProcessInfo.processInfo.processIdentifier)"
    }
}

extension ServiceEnvironment {
    /// `SIGNING_KEY_GRACE_HOURS` as scaled milliseconds: at least the retry window (9 days) plus a day
    /// of margin, so a retry's stored bytes always verify against the JWKS.
    public func signingKeyGrace(policy: TimePolicy) throws -> Milliseconds {
        let hours = try int(.signingKeyGraceHours, default: 240, range: 217...87_600)
        return policy.milliseconds(.hours(Int64(hours)))
    }
}
