import AttributionModel
import ServiceRuntime

/// Request bodies of the event API and the shape checks ingest makes before anything reaches the
/// pipeline. Signature and registry checks are the verifier's.
struct ImpressionRequest: Decodable {
    let deviceIdentifier: String
    let impression: String
    let interaction: Interaction

    enum CodingKeys: String, CodingKey {
        case deviceIdentifier = "device-identifier"
        case impression, interaction
    }

    func report(receivedAt: Milliseconds) throws -> ImpressionReport {
        try EventChecks.device(deviceIdentifier)
        guard !impression.isEmpty, impression.utf8.count <= 8_192, impression.split(separator: ".").count == 3 else {
            throw ProblemDetails.badRequest("invalid-components", "impression must be a compact JWS (three base64url parts)")
        }
        switch interaction.type {
        case .click where interaction.loadedAt == nil:
            throw ProblemDetails.badRequest("invalid-interaction", "a click needs loaded-at: when the impression was loaded")
        case .view where interaction.begin == nil:
            throw ProblemDetails.badRequest("invalid-interaction", "a view needs begin: when the ad appeared on screen")
        default: break
        }
        return ImpressionReport(
            deviceIdentifier: deviceIdentifier, impression: impression, interaction: interaction, receivedAt: receivedAt)
    }
}

struct ConversionRequest: Decodable {
    let deviceIdentifier: String
    let advertisedItemIdentifier: ItemIdentifier
    let conversionType: ConversionType
    let time: Milliseconds
    let countryCode: String?

    enum CodingKeys: String, CodingKey {
        case deviceIdentifier = "device-identifier"
        case advertisedItemIdentifier = "advertised-item-identifier"
        case conversionType = "conversion-type"
        case time
        case countryCode = "country-code"
    }

    func report(receivedAt: Milliseconds) throws -> ConversionReport {
        try EventChecks.device(deviceIdentifier)
        if let countryCode, countryCode.count != 2 || !countryCode.allSatisfy({ $0.isASCII && $0.isUppercase }) {
            throw ProblemDetails.badRequest("invalid-country-code", "country-code is two upper-case letters (ISO 3166-1)")
        }
        return ConversionReport(
            deviceIdentifier: deviceIdentifier, advertisedItemIdentifier: advertisedItemIdentifier,
            conversionType: conversionType, time: time, countryCode: countryCode, receivedAt: receivedAt)
    }
}

/// Flat, with `PostbackUpdate`'s own key names, as an SDK passes them through.
struct ValueUpdateRequest: Decodable {
    let deviceIdentifier: String
    let advertisedItemIdentifier: ItemIdentifier
    let time: Milliseconds
    let update: PostbackUpdate

    enum CodingKeys: String, CodingKey {
        case deviceIdentifier = "device-identifier"
        case advertisedItemIdentifier = "advertised-item-identifier"
        case time
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        deviceIdentifier = try c.decode(String.self, forKey: .deviceIdentifier)
        advertisedItemIdentifier = try c.decode(ItemIdentifier.self, forKey: .advertisedItemIdentifier)
        time = try c.decode(Milliseconds.self, forKey: .time)
        update = try PostbackUpdate(from: decoder)
    }

    func report(receivedAt: Milliseconds) throws -> ValueUpdateReport {
        try EventChecks.device(deviceIdentifier)
        guard PostbackUpdate.fineRange.contains(update.fineConversionValue) else {
            throw ProblemDetails.badRequest("value-out-of-range", "fineConversionValue must be within 0–63")
        }
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
}
