/// Winner selection over one device's pool of AdAttributionKit and SKAN impressions for an advertised app.
public enum WinnerSelection {
    /// At most this many impressions are considered for one conversion (the most recent ones).
    public static let consideredImpressions = 6
    /// At most this many other ad networks get a non-winning postback.
    public static let maximumNonWinners = 5

    public struct Result: Sendable, Hashable {
        public var winner: VerifiedImpression
        public var nonWinners: [VerifiedImpression]
    }

    /// The attribution window for one network's interaction type, or nil when the app tells us to
    /// ignore that type for that network. Precedence: network > global > default.
    public static func window(
        for network: AdNetworkIdentifier, type: InteractionType, configuration: AttributionWindowsConfiguration?
    ) -> Duration? {
        let perNetwork = configuration?.networks[network]
        // `ignoreInteractionType` is honoured per network only, never in `global`.
        if perNetwork?.ignoreInteractionType == type { return nil }
        let days: Int
        switch type {
        case .click:
            days = perNetwork?.click ?? configuration?.global?.click ?? AttributionWindowsConfiguration.defaultClickDays
        case .view:
            days = perNetwork?.view ?? configuration?.global?.view ?? AttributionWindowsConfiguration.defaultViewDays
        }
        return .days(Int64(days))
    }

    /// Ranking: production beats development; click beats view; within a group the most recent wins.
    /// Ties (same time) fall back to the impression id so every replica picks the same winner.
    public static func ranksBefore(_ a: VerifiedImpression, _ b: VerifiedImpression) -> Bool {
        if a.payload.isDevelopment != b.payload.isDevelopment { return !a.payload.isDevelopment }
        if a.interaction.type != b.interaction.type { return a.interaction.type == .click }
        if a.interaction.time != b.interaction.time { return a.interaction.time > b.interaction.time }
        return a.payload.impressionIdentifier < b.payload.impressionIdentifier
    }

    /// Picks the winner and non-winners for a conversion at `time`, or nil if no impression qualifies.
    public static func select(
        from pool: [VerifiedImpression], conversionType: ConversionType, time: Milliseconds,
        app: AdvertisedAppConfiguration, policy: TimePolicy
    ) -> Result? {
        let eligible = pool.filter { impression in
            guard impression.payload.advertisedItemIdentifier == app.itemIdentifier,
                impression.interaction.time <= time,
                let window = window(
                    for: impression.payload.adNetworkIdentifier, type: impression.interaction.type,
                    configuration: app.attributionWindows)
            else { return false }
            if conversionType == .reengagement {
                // Re-engagement: only clicks on impressions that opted in.
                guard impression.interaction.type == .click, impression.payload.eligibleForReengagement == true else {
                    return false
                }
            }
            return time - impression.interaction.time <= policy.milliseconds(window)
        }
        let considered = eligible.sorted { $0.interaction.time > $1.interaction.time }.prefix(consideredImpressions)
        let ranked = considered.sorted(by: ranksBefore)
        guard let winner = ranked.first else { return nil }
        // Re-engagement credits only the driving impression.
        guard conversionType != .reengagement else { return Result(winner: winner, nonWinners: []) }
        var seen: Set<AdNetworkIdentifier> = [winner.payload.adNetworkIdentifier]
        var nonWinners: [VerifiedImpression] = []
        for impression in ranked.dropFirst() where nonWinners.count < maximumNonWinners {
            if seen.insert(impression.payload.adNetworkIdentifier).inserted { nonWinners.append(impression) }
        }
        return Result(winner: winner, nonWinners: nonWinners)
    }
}
