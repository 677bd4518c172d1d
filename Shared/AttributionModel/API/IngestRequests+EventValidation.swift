// The shape checks ingest makes on the event API's bodies before anything reaches the pipeline, and
// the reports they become. Signature and registry checks are the verifier's. The checks run in the
// order written: the first problem found is the one answered.

extension IngestRequests.Impression {
    public func validate() throws(RequestProblem) {
        try RequestChecks.deviceIdentifier(deviceIdentifier)
        switch interaction.type {
        case .click where interaction.loadedAt == nil:
            throw RequestProblem(.invalidInteraction, "a click needs loaded-at: when the impression was loaded")
        case .view where interaction.begin == nil && skadnetworkImpression != nil:
            // SKAdNetwork records a view between startImpression and endImpression; only AdAttributionKit
            // has a one-call view (handleView()).
            throw RequestProblem(.invalidInteraction, "a SKAdNetwork view needs begin: when the ad appeared on screen")
        default: break
        }
        switch (impression, skadnetworkImpression) {
        case (let jws?, nil):
            var dots = 0
            for byte in jws.utf8 where byte == UInt8(ascii: ".") { dots += 1 }
            guard !jws.isEmpty, jws.utf8.count <= 8_192, dots == 2 else {
                throw RequestProblem(.invalidComponents, "impression must be a compact JWS (three base64url parts)")
            }
        case (nil, let skan?):
            do { try skan.validate() } catch { throw RequestProblem(.invalidSKAdNetworkImpression, "\(error)") }
            // The signed fidelity says what the interaction was; the report must agree with it.
            guard skan.interactionType == interaction.type else {
                throw RequestProblem(
                    .invalidInteraction,
                    "fidelity-type \(skan.fidelityType) is a \(skan.interactionType.rawValue), not a \(interaction.type.rawValue)"
                )
            }
        default:
            throw RequestProblem(
                .invalidComponents, "send exactly one of impression (AdAttributionKit JWS) and skadnetwork-impression")
        }
        try RequestChecks.time(interaction.time, field: "interaction.time")
        if let loadedAt = interaction.loadedAt { try RequestChecks.time(loadedAt, field: "interaction.loaded-at") }
        if let begin = interaction.begin { try RequestChecks.time(begin, field: "interaction.begin") }
        // Out of order, the verifier's rules would misread them: a tap before its load would pass the
        // 15-minute click rule.
        if interaction.type == .click, let loadedAt = interaction.loadedAt, loadedAt > interaction.time {
            throw RequestProblem(.invalidInteraction, "loaded-at is after the tap (time): an ad is loaded before it is tapped")
        }
        if interaction.type == .view, let begin = interaction.begin, begin > interaction.time {
            throw RequestProblem(.invalidInteraction, "begin is after time: a view ends after it begins")
        }
    }

    public func report(receivedAt: Milliseconds) throws(RequestProblem) -> ImpressionReport {
        try validate()
        if let skadnetworkImpression {
            return ImpressionReport(
                deviceIdentifier: deviceIdentifier, skadnetworkImpression: skadnetworkImpression, interaction: interaction,
                receivedAt: receivedAt)
        }
        return ImpressionReport(
            deviceIdentifier: deviceIdentifier, impression: impression ?? "", interaction: interaction, receivedAt: receivedAt)
    }
}

extension IngestRequests.Conversion {
    public func validate() throws(RequestProblem) {
        try RequestChecks.deviceIdentifier(deviceIdentifier)
        if let countryCode, !CountryCode.isValid(countryCode) {
            throw RequestProblem(
                .invalidCountryCode, "country-code is an assigned ISO 3166-1 alpha-2 code in upper case, such as US or FR")
        }
        if let marketplaceIdentifier, !Self.isMarketplaceIdentifier(marketplaceIdentifier) {
            throw RequestProblem(
                .invalidMarketplaceIdentifier,
                "marketplace-identifier is a store's bundle id (letters, digits, '-' and '.'-separated labels, at most 255 characters), e.g. com.apple.AppStore"
            )
        }
        try RequestChecks.time(time, field: "time")
        if let reengagementURL {
            guard conversionType == .reengagement else {
                throw RequestProblem(
                    .invalidReengagementURL, "reengagement-url belongs to re-engagements: an install opens no URL")
            }
            _ = try ReengagementOpenURL.validate(reengagementURL)
        }
    }

    /// `conversionTag`: for a re-engagement, the value ingest returns as `conversion-tag` (the app's
    /// `AdAttributionKitReengagementOpen` parameter); updates carrying it apply to this conversion alone.
    public func report(receivedAt: Milliseconds, conversionTag: String) throws(RequestProblem) -> ConversionReport {
        try validate()
        return ConversionReport(
            deviceIdentifier: deviceIdentifier, advertisedItemIdentifier: advertisedItemIdentifier,
            conversionType: conversionType, time: time, countryCode: countryCode, receivedAt: receivedAt,
            conversionTag: conversionType == .reengagement ? conversionTag : nil,
            marketplaceIdentifier: marketplaceIdentifier == PostbackPayload.appStoreMarketplace ? nil : marketplaceIdentifier)
    }

    /// A bundle id: at least two non-empty labels of ASCII letters, digits and '-', 255 characters at most.
    static func isMarketplaceIdentifier(_ text: String) -> Bool {
        let labels = text.split(separator: ".", omittingEmptySubsequences: false)
        return text.utf8.count <= 255 && labels.count >= 2
            && labels.allSatisfy { label in
                !label.isEmpty
                    && label.utf8.allSatisfy {
                        $0 < 0x80
                            && (Character(UnicodeScalar($0)).isLetter || Character(UnicodeScalar($0)).isNumber
                                || $0 == UInt8(ascii: "-"))
                    }
            }
    }
}

extension IngestRequests.ValueUpdate {
    public func validate() throws(RequestProblem) {
        try RequestChecks.deviceIdentifier(deviceIdentifier)
        guard PostbackUpdate.fineRange.contains(update.fineConversionValue) else {
            throw RequestProblem(
                .valueOutOfRange, "\(shape == .skadnetwork ? "fineValue" : "fineConversionValue") must be within 0–63")
        }
        try RequestChecks.time(time, field: "time")
        if let tag = update.conversionTag {
            try RequestChecks.conversionTag(tag)
            if let types = update.conversionTypes, !types.contains(.reengagement) {
                throw RequestProblem(
                    .conversionTagNotSupported,
                    "conversionTag names a re-engagement conversion, but conversionTypes leaves re-engagements out")
            }
        }
    }

    public func report(receivedAt: Milliseconds) throws(RequestProblem) -> ValueUpdateReport {
        try validate()
        return ValueUpdateReport(
            deviceIdentifier: deviceIdentifier, advertisedItemIdentifier: advertisedItemIdentifier, update: update,
            time: time, receivedAt: receivedAt, skadnetworkShape: shape == .skadnetwork ? true : nil)
    }
}

extension IngestRequests.ActivityReportRequest {
    public func validate() throws(RequestProblem) {
        try RequestChecks.deviceIdentifier(deviceIdentifier)
        if let problem = activity.validationProblems().first { throw RequestProblem(.invalidActivity, problem) }
        try RequestChecks.time(time, field: "time")
        if let conversionTag { try RequestChecks.conversionTag(conversionTag) }
    }

    public func report(receivedAt: Milliseconds) throws(RequestProblem) -> ActivityReport {
        try validate()
        return ActivityReport(
            deviceIdentifier: deviceIdentifier, advertisedItemIdentifier: advertisedItemIdentifier, activity: activity,
            time: time, receivedAt: receivedAt, conversionTag: conversionTag)
    }
}

extension IngestRequests.EvaluationRequest {
    /// The window and the totals; whether the caller holds the app's key is ingest's check, made first.
    public func validate() throws(RequestProblem) {
        guard (0...2).contains(window) else { throw RequestProblem(.valueOutOfRange, "window must be 0, 1 or 2") }
        // As `GET …/conversion-value-schema/{version}` answers: a version that cannot exist is a bad request.
        if let version, version < 1 { throw RequestProblem(.invalidVersion, "schema versions are positive integers") }
        // Totals may be all zero here: an app asks what it would report before anything happened.
        let totals = Activity(sessions: sessions, events: events, revenue: revenue)
        if let problem = totals.validationProblems().first(where: { !$0.hasPrefix("an activity report needs") }) {
            throw RequestProblem(.invalidActivity, problem)
        }
    }
}
