import AttributionModel

/// One line of the receiver's JSONL output: the first copy of each postback, as received.
struct ReceivedPostback: Codable, Sendable {
    var receivedAt: Milliseconds
    /// The request path: `/postbacks` or the advertiser copy path.
    var path: String
    /// `adattributionkit` (a JWS) or `skadnetwork` (a 4.0 body with `attribution-signature`).
    var kind: String?
    /// The kid of the key that verified it (for a SKAdNetwork body: the published key that did).
    var kid: String
    /// Always false in the file (only first copies are written); kept so a line is self-describing.
    var duplicate: Bool
    /// The signed payload, field for field (SKAdNetwork: its fields under the AdAttributionKit names).
    var payload: JSONValue
    /// The HTTP body, including the unsigned value fields.
    var body: JSONValue

    enum CodingKeys: String, CodingKey {
        case receivedAt = "received-at"
        case path, kind, kid, duplicate, payload, body
    }
}

/// The least a line must hold to be counted or deduplicated: summary and the dedup seed read this
/// (deduplication is per path and postback id).
struct ReceivedPostbackHeader: Decodable {
    var payload: PostbackPayload
    var path: String?
}
