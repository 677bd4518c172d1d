/// One row of the configuration catalog: what the configuration reference's table and the compose check read. Every
/// row is made by a `ConfigurationKey.Typed` (ConfigurationKey+Catalog.swift), so its type, default and
/// allowed columns are rendered from the very values the services parse with.
public struct ConfigurationKey: Sendable, Hashable {
    public let name: String
    public let type: String
    /// The default as text; nil means required.
    public let defaultValue: String?
    /// What a set value may be (a range, a list), as text; nil when any text is taken as it is.
    public let allowed: String?
    public let services: [String]
    public let summary: String
}

extension ConfigurationKey {
    /// A catalogued key with its Swift type: how a set value is read and checked, and what the key means
    /// when it is unset (or empty). Call sites pass nothing of their own: `environment.value(.batchSize)`.
    public struct Typed<Value: Sendable>: Sendable {
        /// The catalog row, rendered from the same parts as `read` and `fallback`.
        public let key: ConfigurationKey
        /// The value of an unset key; nil when the key is required.
        let fallback: (@Sendable () -> Value)?
        /// The value of a set key, or what is wrong with it.
        let read: @Sendable (String) throws(Unreadable) -> Value

        public var name: String { key.name }

        /// `default`: how the default reads in the table and the value it stands for; nil means required.
        init(
            _ name: String, type: String, default fallback: (text: String, value: @Sendable () -> Value)?,
            allowed: String? = nil, services: [String], _ summary: String,
            read: @escaping @Sendable (String) throws(Unreadable) -> Value
        ) {
            self.key = ConfigurationKey(
                name: name, type: type, defaultValue: fallback?.text, allowed: allowed, services: services, summary: summary)
            self.fallback = fallback?.value
            self.read = read
        }
    }

    /// Why a set value cannot be used, in the words `ConfigurationError` prints after the key's name.
    public struct Unreadable: Error, Sendable {
        public let problem: String

        public init(_ problem: String) { self.problem = problem }
    }
}
