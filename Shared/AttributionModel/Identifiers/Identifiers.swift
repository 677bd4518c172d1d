/// An App Store item id (advertised or publisher app). `0` as a publisher marks a development impression.
public typealias ItemIdentifier = UInt64

/// A registered ad network's id, e.g. `example.adattributionkit` or `abc123.skadnetwork`: lowercase only.
public struct AdNetworkIdentifier: Hashable, Sendable, Codable, CustomStringConvertible, Comparable {
    public let rawValue: String

    /// Ids are lowercase letters, digits, dots, dashes and underscores, 1–255 characters.
    public init?(_ rawValue: String) {
        guard !rawValue.isEmpty, rawValue.utf8.count <= 255,
            rawValue.utf8.allSatisfy({ byte in
                (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2E || byte == 0x2D
                    || byte == 0x5F
            })
        else { return nil }
        self.rawValue = rawValue
    }

    public var description: String { rawValue }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    public init(from decoder: any Decoder) throws {
        let raw = try decoder.singleValueContainer().decode(String.self)
        guard let value = AdNetworkIdentifier(raw) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "ad network id must be lowercase: \(raw)"))
        }
        self = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// SKAN 4 hierarchical source id: up to four digits.
public enum SourceIdentifier {
    public static let range: ClosedRange<Int> = 0...9999
}
