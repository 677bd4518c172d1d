import AttributionModel
import ServiceRuntime

/// The shape checks ingest makes on the event API's bodies (`IngestRequests`, shared with clients)
/// before anything reaches the pipeline. Signature and registry checks are the verifier's.
extension IngestRequests.Impression {
    func report(receivedAt: Milliseconds) throws -> ImpressionReport {
        let report = try shapedReport(receivedAt: receivedAt)
        try EventChecks.time(interaction.time, field: "interaction.time")
        if let loadedAt = interaction.loadedAt { try EventChecks.time(loadedAt, field: "interaction.loaded-at") }
        if let begin = interaction.begin { try EventChecks.time(begin, field: "interaction.begin") }
        return report
    }

    private func shapedReport(receivedAt: Milliseconds) throws -> ImpressionReport {
        try EventChecks.device(deviceIdentifier)
        switch interaction.type {
        case .click where interaction.loadedAt == nil:
            throw ProblemDetails.badRequest("invalid-interaction", "a click needs loaded-at: when the impression was loaded")
        case .view where interaction.begin == nil:
            throw ProblemDetails.badRequest("invalid-interaction", "a view needs begin: when the ad appeared on screen")
        default: break
        }
        switch (impression, skadnetworkImpression) {
        case (let jws?, nil):
            guard !jws.isEmpty, jws.utf8.count <= 8_192, jws.split(separator: ".", omittingEmptySubsequences: false).count == 3
            else {
                throw ProblemDetails.badRequest("invalid-components", "impression must be a compact JWS (three base64url parts)")
            }
            return ImpressionReport(
                deviceIdentifier: deviceIdentifier, impression: jws, interaction: interaction, receivedAt: receivedAt)
        case (nil, let skan?):
            do { try skan.validate() } catch {
                throw ProblemDetails.badRequest("invalid-skadnetwork-impression", "\(error)")
            }
            // The signed fidelity says what the interaction was; the report must agree with it.
            guard skan.interactionType == interaction.type else {
                throw ProblemDetails.badRequest(
                    "invalid-interaction",
                    "fidelity-type \(skan.fidelityType) is a \(skan.interactionType.rawValue), not a \(interaction.type.rawValue)"
                )
            }
            return ImpressionReport(
                deviceIdentifier: deviceIdentifier, skadnetworkImpression: skan, interaction: interaction, receivedAt: receivedAt)
        default:
            throw ProblemDetails.badRequest(
                "invalid-components", "send exactly one of impression (AdAttributionKit JWS) and skadnetwork-impression")
        }
    }
}

extension IngestRequests.Conversion {
    /// `conversionTag`: for a re-engagement, the value ingest returns as `conversion-tag` (the app's
    /// `AdAttributionKitReengagementOpen` parameter); updates carrying it apply to this conversion alone.
    func report(receivedAt: Milliseconds, conversionTag: String) throws -> ConversionReport {
        try EventChecks.device(deviceIdentifier)
        if let countryCode, countryCode.count != 2 || !countryCode.allSatisfy({ $0.isASCII && $0.isUppercase }) {
            throw ProblemDetails.badRequest("invalid-country-code", "country-code is two upper-case letters (ISO 3166-1)")
        }
        try EventChecks.time(time, field: "time")
        return ConversionReport(
            deviceIdentifier: deviceIdentifier, advertisedItemIdentifier: advertisedItemIdentifier,
            conversionType: conversionType, time: time, countryCode: countryCode, receivedAt: receivedAt,
            conversionTag: conversionType == .reengagement ? conversionTag : nil)
    }
}

extension IngestRequests.ValueUpdate {
    func report(receivedAt: Milliseconds) throws -> ValueUpdateReport {
        try EventChecks.device(deviceIdentifier)
        guard PostbackUpdate.fineRange.contains(update.fineConversionValue) else {
            throw ProblemDetails.badRequest("value-out-of-range", "fineConversionValue must be within 0–63")
        }
        try EventChecks.time(time, field: "time")
        return ValueUpdateReport(
            deviceIdentifier: deviceIdentifier, advertisedItemIdentifier: advertisedItemIdentifier, update: update,
            time: time, receivedAt: receivedAt)
    }
}

enum EventChecks {
    static func device(_ identifier: String) throws {
        guard !identifier.isEmpty, identifier.utf8.count <= 128 else {
            throw ProblemDetails.badRequest("invalid-device-identifier", "device-identifier must be 1–128 bytes")
        }
    }

    /// Every reported time: see `PlausibleTime`.
    static func time(_ time: Milliseconds, field: String) throws {
        if let problem = PlausibleTime.problem(time, field: field) { throw ProblemDetails.badRequest("invalid-time", problem) }
    }
}
