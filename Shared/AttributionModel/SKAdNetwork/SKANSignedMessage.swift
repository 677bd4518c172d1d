/// How SKAdNetwork builds the bytes it signs: the field values as text, in a version-specific order,
/// joined by U+2063 (INVISIBLE SEPARATOR), as UTF-8 [Verifying an install-validation postback].
public enum SKANSignedMessage {
    public static let separator = "\u{2063}"

    public static func join(_ values: [String]) -> String { values.joined(separator: separator) }

    /// Booleans are signed as the strings `true` and `false`.
    public static func text(_ value: Bool) -> String { value ? "true" : "false" }
}

/// The curve a SKAdNetwork signature uses: Apple signed postbacks of versions 1.0 and 2.0 with a
/// P-192 key, and signs 2.1 and later (and ad networks sign impressions) with P-256.
public enum SKANCurve: String, Sendable, Codable, Hashable, CaseIterable {
    case p192 = "P-192"
    case p256 = "P-256"
}
