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

    /// The members read: the encoded ones (Swift's `CodingKeys`), `conversion-tag`, read as
    /// `conversionTag` (see `ConversionTag`) and never written, and SKAdNetwork's spellings (`Shape`).
    enum DecodingKeys: String, CodingKey {
        case fineConversionValue, coarseConversionValue, lockPostback, conversionTypes, conversionTag
        case conversionTagAsAnswered = "conversion-tag"
        case fineValue, coarseValue, lockWindow
    }

    /// How the app spelt an update: AdAttributionKit's `PostbackUpdate` (`fineConversionValue`,
    /// `coarseConversionValue`, `lockPostback`, `conversionTypes`, `conversionTag`), or the arguments of
    /// SKAdNetwork's `updatePostbackConversionValue(_:coarseValue:lockWindow:)` (`fineValue`,
    /// `coarseValue`, `lockWindow`; SKAdNetwork has no conversion types or tags). One body is one shape.
    public enum Shape: String, Sendable, Hashable {
        case adAttributionKit, skadnetwork
    }

    public init(from decoder: any Decoder) throws {
        self = try Self.decode(from: decoder).update
    }

    /// The update, and the shape it was spelt in; a body mixing the two shapes is refused, naming both.
    public static func decode(from decoder: any Decoder) throws -> (update: PostbackUpdate, shape: Shape) {
        let c = try decoder.container(keyedBy: DecodingKeys.self)
        let skadnetwork: [DecodingKeys] = [.fineValue, .coarseValue, .lockWindow]
        let adAttributionKit: [DecodingKeys] = [
            .fineConversionValue, .coarseConversionValue, .lockPostback, .conversionTypes, .conversionTag,
            .conversionTagAsAnswered,
        ]
        if let skan = skadnetwork.first(where: c.contains) {
            if let aak = adAttributionKit.first(where: c.contains) {
                throw DecodingError.dataCorruptedError(
                    forKey: aak, in: c,
                    debugDescription: "it is AdAttributionKit's spelling, and \(skan.stringValue) SKAdNetwork's; "
                        + "an update uses one of the two shapes")
            }
            let update = PostbackUpdate(
                fineConversionValue: try c.decode(Int.self, forKey: .fineValue),
                coarseConversionValue: try c.decodeIfPresent(CoarseConversionValue.self, forKey: .coarseValue),
                lockPostback: try c.decodeIfPresent(Bool.self, forKey: .lockWindow) ?? false)
            return (update, .skadnetwork)
        }
        let update = PostbackUpdate(
            fineConversionValue: try c.decode(Int.self, forKey: .fineConversionValue),
            coarseConversionValue: try c.decodeIfPresent(CoarseConversionValue.self, forKey: .coarseConversionValue),
            lockPostback: try c.decodeIfPresent(Bool.self, forKey: .lockPostback) ?? false,
            conversionTypes: try c.decodeIfPresent([ConversionKind].self, forKey: .conversionTypes),
            conversionTag: try ConversionTag.decode(from: c, .conversionTag, or: .conversionTagAsAnswered))
        return (update, .adAttributionKit)
    }

    /// The update in SKAdNetwork's shape, as an app passing `updatePostbackConversionValue`'s arguments
    /// sends it (clients and tests; conversion types and tags have no SKAdNetwork spelling).
    public func encodeInSKAdNetworkShape(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: DecodingKeys.self)
        try c.encode(fineConversionValue, forKey: .fineValue)
        try c.encodeIfPresent(coarseConversionValue, forKey: .coarseValue)
        try c.encode(lockPostback, forKey: .lockWindow)
    }

    /// Whether this update applies to a conversion of the given type (absent `conversionTypes` = all).
    public func applies(to type: ConversionType) -> Bool {
        conversionTypes.map { $0.contains(type.updateKind) } ?? true
    }
}

/// Where a request names its conversion tag: Apple's `conversionTag` (the documented member), or
/// `conversion-tag`, as the conversion's 202 spells it and a client may echo it back. Both are read, from
/// the type's own container (no second one per message), so neither spelling is dropped as an unknown
/// member; the two at once must agree.
enum ConversionTag {
    static func decode<Key: CodingKey>(from c: KeyedDecodingContainer<Key>, _ apple: Key, or answered: Key) throws -> String? {
        let (tag, echoed) = (
            try c.decodeIfPresent(String.self, forKey: apple), try c.decodeIfPresent(String.self, forKey: answered)
        )
        if let tag, let echoed, tag != echoed {
            throw DecodingError.dataCorruptedError(
                forKey: answered, in: c, debugDescription: "conversionTag and conversion-tag name different conversions")
        }
        return tag ?? echoed
    }
}
