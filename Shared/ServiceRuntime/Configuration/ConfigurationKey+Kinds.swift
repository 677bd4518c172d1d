import AttributionModel

// The kinds of key most of the catalog is made of. Each takes its default and range once; the table's
// columns and the parser's check are both drawn from them.

extension ConfigurationKey.Typed where Value == Int {
    /// A whole number within `range`: a count, or a size in `unit`s.
    static func integer(
        _ name: String, unit: String = "integer", default value: Int, range: ClosedRange<Int>, services: [String],
        _ summary: String
    ) -> Self {
        Self(
            name, type: unit, default: (String(value), { value }), allowed: ConfigurationKey.describe(range),
            services: services, summary
        ) { text throws(ConfigurationKey.Unreadable) in
            guard let value = Int(text), range.contains(value) else { throw .outside(range, text) }
            return value
        }
    }
}

extension ConfigurationKey.Typed where Value == Milliseconds {
    /// A duration in whole milliseconds within `range`. `note` says which clock it runs on when that matters.
    static func milliseconds(
        _ name: String, note: String? = nil, default value: Milliseconds, range: ClosedRange<Milliseconds>,
        services: [String], _ summary: String
    ) -> Self {
        Self(
            name, type: note.map { "milliseconds (\($0))" } ?? "milliseconds", default: (String(value), { value }),
            allowed: ConfigurationKey.describe(range), services: services, summary
        ) { text throws(ConfigurationKey.Unreadable) in
            guard let value = Milliseconds(text), range.contains(value) else { throw .outside(range, text) }
            return value
        }
    }
}

extension ConfigurationKey.Typed where Value == Duration {
    /// Whole hours within `range`, as a real-world duration: the caller decides whether `TIME_SCALE`
    /// shortens it (`TimePolicy.milliseconds`) or not (`TimePolicy.realTime`).
    static func hours(
        _ name: String, default hours: Int, range: ClosedRange<Int>, services: [String], _ summary: String
    ) -> Self {
        Self(
            name, type: "hours", default: (String(hours), { .hours(Int64(hours)) }), allowed: ConfigurationKey.describe(range),
            services: services, summary
        ) { text throws(ConfigurationKey.Unreadable) in
            guard let value = Int(text), range.contains(value) else { throw .outside(range, text) }
            return .hours(Int64(value))
        }
    }
}

extension ConfigurationKey.Typed where Value == String {
    /// Any text, taken as it is.
    static func text(
        _ name: String, type: String = "string", default value: String, services: [String], _ summary: String
    ) -> Self {
        Self(name, type: type, default: (value, { value }), services: services, summary) { text in text }
    }

    /// Any text, and no default: the service does not start without it.
    static func required(_ name: String, type: String, services: [String], _ summary: String) -> Self {
        Self(name, type: type, default: nil, services: services, summary) { text in text }
    }
}

extension ConfigurationKey.Typed where Value == String? {
    /// A credential of at least `minimumLength` characters, set here or read from the key named `file`
    /// (`ServiceEnvironment.secret`): one of the two is required, and the file's text is held to the same check.
    static func secret(_ name: String, minimumLength: Int, file: String, services: [String], _ summary: String) -> Self {
        Self(
            name, type: "secret", default: ("none: required unless \(file)", { nil }),
            allowed: "at least \(minimumLength) characters", services: services, summary
        ) { text throws(ConfigurationKey.Unreadable) in
            guard text.count >= minimumLength else {
                throw ConfigurationKey.Unreadable("must be at least \(minimumLength) characters, got \(text.count)")
            }
            return text
        }
    }

    /// A file to read, or nil when unset: `unsetMeans` says what the service does instead.
    static func path(_ name: String, unsetMeans: String, services: [String], _ summary: String) -> Self {
        Self(name, type: "path", default: (unsetMeans, { nil }), services: services, summary) { text in text }
    }
}

extension ConfigurationKey {
    /// A range as the table shows it.
    static func describe<Bound: BinaryInteger>(_ range: ClosedRange<Bound>) -> String {
        "\(range.lowerBound)–\(range.upperBound)"
    }
}

extension ConfigurationKey.Unreadable {
    /// The integer kinds' complaint (its words predate the typed catalog; operators may grep for them).
    static func outside<Bound>(_ range: ClosedRange<Bound>, _ text: String) -> Self {
        Self("must be an integer in \(range), got \(text)")
    }
}
