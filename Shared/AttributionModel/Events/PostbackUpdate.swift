/// Coarse conversion value, the only value later windows and low tiers carry.
public enum CoarseConversionValue: String, Sendable, Codable, Hashable, CaseIterable {
    case low, medium, high
}

/// A conversion-value update as the app reports it (AdAttributionKit's `PostbackUpdate`).
public struct PostbackUpdate: Sendable, Codable, Hashable {
    public var fineConversionValue: Int
    public var coarseConversionValue: CoarseConversionValue?
    public var lockPostback: Bool
    /// Absent means the update applies to every kind of conversion.
    public var conversionTypes: [ConversionKind]?
    /// Routes the update to the re-engagement conversion with this tag.
    public var conversionTag: String?

    public static let fineRange: ClosedRange<Int> = 0...63

    public init(
        fineConversionValue: Int, coarseConversionValue: CoarseConversionValue? = nil, lockPostback: Bool = false,
        conversionTypes: [ConversionKind]? = nil, conversionTag: String? = nil
    ) {
        self.fineConversionValue = fineConversionValue
        self.coarseConversionValue = coarseConversionValue
        self.lockPostback = lockPostback
        self.conversionTypes = conversionTypes
        self.conversionTag = conversionTag
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        fineConversionValue = try c.decode(Int.self, forKey: .fineConversionValue)
        coarseConversionValue = try c.decodeIfPresent(CoarseConversionValue.self, forKey: .coarseConversionValue)
        lockPostback = try c.decodeIfPresent(Bool.self, forKey: .lockPostback) ?? false
        conversionTypes = try c.decodeIfPresent([ConversionKind].self, forKey: .conversionTypes)
        conversionTag = try c.decodeIfPresent(String.self, forKey: .conversionTag)
    }

    /// Whether this update applies to a conversion of the given type (absent `conversionTypes` = all).
    public func applies(to type: ConversionType) -> Bool {
        conversionTypes.map { $0.contains(type.updateKind) } ?? true
    }
}
