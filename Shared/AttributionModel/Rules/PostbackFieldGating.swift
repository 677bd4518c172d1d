/// Which fields a postback may carry, by crowd tier, window and winning status (spec section 5).
public struct PostbackFields: Sendable, Hashable {
    public var sourceIdentifierDigits: Int
    public var conversionValue: Int?
    public var coarseConversionValue: CoarseConversionValue?
    public var includesPublisherItemIdentifier: Bool
    public var includesCountryCode: Bool
    public var includesMarketplace: Bool
}

public enum PostbackFieldGating {
    /// The values the window collected: the last fine and coarse values the app reported.
    public struct Values: Sendable, Hashable, Codable {
        public var fine: Int?
        public var coarse: CoarseConversionValue?
        public init(fine: Int? = nil, coarse: CoarseConversionValue? = nil) {
            self.fine = fine
            self.coarse = coarse
        }
    }

    /// Fields for a postback, or nil when this tier gets no postback for this window.
    public static func fields(
        sequenceIndex: Int, didWin: Bool, values: Values, crowd: CrowdAssessment
    ) -> PostbackFields? {
        let tier = crowd.tier
        // Tier 0 gets no second or third postback; non-winners get the first window only.
        if sequenceIndex > 0 && (tier == .zero || !didWin) { return nil }
        let marketplace = tier > .zero
        if !didWin {
            // Non-winners: 2 digits, never a fine value or the publisher id (decision: coarse from tier 1).
            return PostbackFields(
                sourceIdentifierDigits: 2, conversionValue: nil, coarseConversionValue: tier >= .one ? values.coarse : nil,
                includesPublisherItemIdentifier: false, includesCountryCode: false, includesMarketplace: marketplace)
        }
        if sequenceIndex > 0 {
            // Later windows: 2 digits and coarse only.
            return PostbackFields(
                sourceIdentifierDigits: 2, conversionValue: nil, coarseConversionValue: values.coarse,
                includesPublisherItemIdentifier: false, includesCountryCode: false, includesMarketplace: true)
        }
        switch tier {
        case .zero:
            return PostbackFields(
                sourceIdentifierDigits: 2, conversionValue: nil, coarseConversionValue: nil,
                includesPublisherItemIdentifier: false, includesCountryCode: false, includesMarketplace: false)
        case .one:
            return PostbackFields(
                sourceIdentifierDigits: 2, conversionValue: nil, coarseConversionValue: values.coarse,
                includesPublisherItemIdentifier: false, includesCountryCode: false, includesMarketplace: true)
        case .two:
            // Fine when set, never both: the coarse value only stands in when no fine value exists.
            return PostbackFields(
                sourceIdentifierDigits: crowd.sourceIdentifierDigits, conversionValue: values.fine,
                coarseConversionValue: values.fine == nil ? values.coarse : nil,
                includesPublisherItemIdentifier: false, includesCountryCode: false, includesMarketplace: true)
        default:
            return PostbackFields(
                sourceIdentifierDigits: crowd.sourceIdentifierDigits, conversionValue: values.fine,
                coarseConversionValue: values.fine == nil ? values.coarse : nil,
                includesPublisherItemIdentifier: true, includesCountryCode: crowd.countryIsTierThree,
                includesMarketplace: true)
        }
    }
}
