/// What converted: a first download, a redownload, or a re-engagement of an installed app.
public enum ConversionType: String, Sendable, Codable, Hashable, CaseIterable {
    case download
    case redownload
    case reengagement = "re-engagement"

    /// Accepts the spec's spellings, including `reengagement` as used in `conversionTypes`.
    public init?(spelling: String) {
        switch spelling {
        case "download": self = .download
        case "redownload": self = .redownload
        case "re-engagement", "reengagement": self = .reengagement
        default: return nil
        }
    }

    public init(from decoder: any Decoder) throws {
        let raw = try decoder.singleValueContainer().decode(String.self)
        guard let value = ConversionType(spelling: raw) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "unknown conversion type: \(raw)"))
        }
        self = value
    }

    /// The `conversionTypes` bucket an update names: installs (download, redownload) or re-engagements.
    public var updateKind: ConversionKind { self == .reengagement ? .reengagement : .install }
}

/// The two kinds a `PostbackUpdate.conversionTypes` filter can name.
public enum ConversionKind: String, Sendable, Codable, Hashable {
    case install
    case reengagement
}
