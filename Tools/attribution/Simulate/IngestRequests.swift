import AttributionModel

/// Request bodies of the ingest API, with its exact key spellings.
enum IngestRequests {
    struct AdNetwork: Encodable {
        var publicKey: String
        var postbackURL: String

        enum CodingKeys: String, CodingKey {
            case publicKey = "public-key"
            case postbackURL = "postback-url"
        }
    }

    struct PublisherApp: Encodable {
        var adNetworkIdentifiers: [String]

        enum CodingKeys: String, CodingKey {
            case adNetworkIdentifiers = "AdNetworkIdentifiers"
        }
    }

    /// `{}`: Apple's default windows and no cooldown, which is what the expected counts assume.
    struct AdvertisedApp: Encodable {}

    struct Impression: Encodable {
        var deviceIdentifier: String
        var impression: String
        var interaction: Interaction

        enum CodingKeys: String, CodingKey {
            case deviceIdentifier = "device-identifier"
            case impression, interaction
        }
    }

    struct Conversion: Encodable {
        var deviceIdentifier: String
        var advertisedItemIdentifier: ItemIdentifier
        var conversionType: ConversionType
        var time: Milliseconds
        var countryCode: String?

        enum CodingKeys: String, CodingKey {
            case deviceIdentifier = "device-identifier"
            case advertisedItemIdentifier = "advertised-item-identifier"
            case conversionType = "conversion-type"
            case time
            case countryCode = "country-code"
        }
    }

    struct ValueUpdate: Encodable {
        var deviceIdentifier: String
        var advertisedItemIdentifier: ItemIdentifier
        var time: Milliseconds
        var fineConversionValue: Int
        var coarseConversionValue: CoarseConversionValue?
        var lockPostback: Bool

        init(deviceIdentifier: String, advertisedItemIdentifier: ItemIdentifier, time: Milliseconds, update: PostbackUpdate) {
            self.deviceIdentifier = deviceIdentifier
            self.advertisedItemIdentifier = advertisedItemIdentifier
            self.time = time
            fineConversionValue = update.fineConversionValue
            coarseConversionValue = update.coarseConversionValue
            lockPostback = update.lockPostback
        }

        enum CodingKeys: String, CodingKey {
            case deviceIdentifier = "device-identifier"
            case advertisedItemIdentifier = "advertised-item-identifier"
            case time, fineConversionValue, coarseConversionValue, lockPostback
        }
    }
}
