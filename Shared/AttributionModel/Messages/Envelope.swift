import Foundation

/// Every message on every stream: a typed envelope (type, id, event time, schema version, body),
/// defined once here so that all five services read and write the same bytes.
public struct Envelope: Sendable, Hashable {
    public var id: String
    /// When the event happened (reporter's clock), in milliseconds.
    public var time: Milliseconds
    public var schema: Int
    public var body: MessageBody

    public static let currentSchema = 1

    public init(id: String = RandomUUID.make(), time: Milliseconds, body: MessageBody) {
        self.id = id
        self.time = time
        self.schema = Envelope.currentSchema
        self.body = body
    }

    public var type: MessageType { body.type }
}

/// The message types, spelled as they appear in the envelope's `type`.
public enum MessageType: String, Sendable, Codable, Hashable, CaseIterable {
    case impressionReported = "impression.reported"
    case conversionReported = "conversion.reported"
    case updateReported = "update.reported"
    case impressionVerified = "impression.verified"
    case conversionVerified = "conversion.verified"
    case updateVerified = "update.verified"
    case rejected = "event.rejected"
    case conversionAttributed = "conversion.attributed"
    case updateAttributed = "update.attributed"
    case conversionSuperseded = "conversion.superseded"
    case windowClosed = "window.closed"
    case postbackDue = "postback.due"
    case deliveryRetry = "delivery.retry"
    case activityReported = "activity.reported"
    case activityVerified = "activity.verified"
    case activityAttributed = "activity.attributed"
    case testPostbacksRequested = "test-postbacks.requested"
}

public enum MessageBody: Sendable, Hashable {
    case impressionReported(ImpressionReport)
    case conversionReported(ConversionReport)
    case updateReported(ValueUpdateReport)
    case impressionVerified(VerifiedImpression)
    case conversionVerified(VerifiedConversion)
    case updateVerified(ValueUpdateReport)
    case rejected(Rejection)
    case conversionAttributed(Attribution)
    case updateAttributed(AttributedUpdate)
    case conversionSuperseded(ConversionSuperseded)
    case windowClosed(WindowClosed)
    case postbackDue(PostbackOrder)
    case deliveryRetry(DeliveryRetry)
    case activityReported(ActivityReport)
    case activityVerified(ActivityReport)
    case activityAttributed(AttributedActivity)
    /// An ad network's test postbacks, on `events`, `verified` and `attributions` alike.
    case testPostbacksRequested(TestPostbackRequest)

    public var type: MessageType {
        switch self {
        case .impressionReported: .impressionReported
        case .conversionReported: .conversionReported
        case .updateReported: .updateReported
        case .impressionVerified: .impressionVerified
        case .conversionVerified: .conversionVerified
        case .updateVerified: .updateVerified
        case .rejected: .rejected
        case .conversionAttributed: .conversionAttributed
        case .updateAttributed: .updateAttributed
        case .conversionSuperseded: .conversionSuperseded
        case .windowClosed: .windowClosed
        case .postbackDue: .postbackDue
        case .deliveryRetry: .deliveryRetry
        case .activityReported: .activityReported
        case .activityVerified: .activityVerified
        case .activityAttributed: .activityAttributed
        case .testPostbacksRequested: .testPostbacksRequested
        }
    }
}

extension Envelope: Codable {
    enum CodingKeys: String, CodingKey {
        case type, id, time, schema, body
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        time = try c.decode(Milliseconds.self, forKey: .time)
        schema = try c.decode(Int.self, forKey: .schema)
        switch try c.decode(MessageType.self, forKey: .type) {
        case .impressionReported: body = .impressionReported(try c.decode(ImpressionReport.self, forKey: .body))
        case .conversionReported: body = .conversionReported(try c.decode(ConversionReport.self, forKey: .body))
        case .updateReported: body = .updateReported(try c.decode(ValueUpdateReport.self, forKey: .body))
        case .impressionVerified: body = .impressionVerified(try c.decode(VerifiedImpression.self, forKey: .body))
        case .conversionVerified: body = .conversionVerified(try c.decode(VerifiedConversion.self, forKey: .body))
        case .updateVerified: body = .updateVerified(try c.decode(ValueUpdateReport.self, forKey: .body))
        case .rejected: body = .rejected(try c.decode(Rejection.self, forKey: .body))
        case .conversionAttributed: body = .conversionAttributed(try c.decode(Attribution.self, forKey: .body))
        case .updateAttributed: body = .updateAttributed(try c.decode(AttributedUpdate.self, forKey: .body))
        case .conversionSuperseded: body = .conversionSuperseded(try c.decode(ConversionSuperseded.self, forKey: .body))
        case .windowClosed: body = .windowClosed(try c.decode(WindowClosed.self, forKey: .body))
        case .postbackDue: body = .postbackDue(try c.decode(PostbackOrder.self, forKey: .body))
        case .deliveryRetry: body = .deliveryRetry(try c.decode(DeliveryRetry.self, forKey: .body))
        case .activityReported: body = .activityReported(try c.decode(ActivityReport.self, forKey: .body))
        case .activityVerified: body = .activityVerified(try c.decode(ActivityReport.self, forKey: .body))
        case .activityAttributed: body = .activityAttributed(try c.decode(AttributedActivity.self, forKey: .body))
        case .testPostbacksRequested: body = .testPostbacksRequested(try c.decode(TestPostbackRequest.self, forKey: .body))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(type, forKey: .type)
        try c.encode(id, forKey: .id)
        try c.encode(time, forKey: .time)
        try c.encode(schema, forKey: .schema)
        switch body {
        case .impressionReported(let b): try c.encode(b, forKey: .body)
        case .conversionReported(let b): try c.encode(b, forKey: .body)
        case .updateReported(let b): try c.encode(b, forKey: .body)
        case .impressionVerified(let b): try c.encode(b, forKey: .body)
        case .conversionVerified(let b): try c.encode(b, forKey: .body)
        case .updateVerified(let b): try c.encode(b, forKey: .body)
        case .rejected(let b): try c.encode(b, forKey: .body)
        case .conversionAttributed(let b): try c.encode(b, forKey: .body)
        case .updateAttributed(let b): try c.encode(b, forKey: .body)
        case .conversionSuperseded(let b): try c.encode(b, forKey: .body)
        case .windowClosed(let b): try c.encode(b, forKey: .body)
        case .postbackDue(let b): try c.encode(b, forKey: .body)
        case .deliveryRetry(let b): try c.encode(b, forKey: .body)
        case .activityReported(let b): try c.encode(b, forKey: .body)
        case .activityVerified(let b): try c.encode(b, forKey: .body)
        case .activityAttributed(let b): try c.encode(b, forKey: .body)
        case .testPostbacksRequested(let b): try c.encode(b, forKey: .body)
        }
    }
}

extension Envelope {
    /// The bytes of a stream entry: the envelope as one UTF-8 JSON object with sorted keys, which any
    /// consumer in any language reads (docs/reference/messages.md publishes a schema for each type).
    /// Throws `JSONEncoding` failures rather than writing an empty entry (none of the model's value
    /// types can fail to encode today; a future one that did must fail its batch, not lose a message).
    public func encoded() throws -> [UInt8] {
        // The campaign's message types by hand (Envelope+MessageJSON); the rare ones (refusals, retries,
        // activity, test postbacks) through JSONEncoder, whose bytes the hand writer matches.
        if let json = messageJSON() { return json }
        return Array(try JSONCoding.encoder.encode(self))
    }

    /// A stream entry: JSON (what the message codec wrote through `MessageJSONReader`, other plain JSON
    /// through `PlainJSON`, the rest through JSONDecoder), or
    /// one of the two binary forms release 0.1.0 wrote and a stage may still find on a stream after an
    /// upgrade (docs/operating/upgrading.md): the compact envelope (`CompactCoding`) and the held
    /// postback (`CompactHeldPostback`, released from the scheduler's held queue into `postbacks`), which
    /// becomes a `postback.due` envelope with the postback id as id.
    public static func decode(_ bytes: [UInt8]) throws -> Envelope {
        switch StoredForm(bytes) {
        case .heldPostback: try released(bytes)
        case .compact: try CompactCoding.decodeByCodable(Envelope.self, from: bytes)
        case .json: try fromMessageJSON(bytes) ?? PlainJSON.decode(Envelope.self, from: Data(bytes))
        }
    }

    /// The form a stream entry's message is stored in, told by its first byte: this release's JSON, or
    /// one of the binary forms release 0.1.0 wrote.
    public enum StoredForm: String, Sendable {
        case json
        case compact
        case heldPostback = "held-postback"

        public init(_ bytes: [UInt8]) {
            self =
                bytes.first == CompactHeldPostback.magic ? .heldPostback : CompactCoding.isCompact(bytes) ? .compact : .json
        }
    }

    /// The `postback.due` envelope of a held postback as the scheduler's held queue stores it.
    public static func released(_ held: [UInt8]) throws -> Envelope {
        let (order, dueAt) = try CompactHeldPostback.decode(held)
        return Envelope(id: order.payload.postbackIdentifier, time: dueAt, body: .postbackDue(order))
    }
}

/// One JSON configuration for the whole pipeline: sorted keys make messages and tests deterministic.
public enum JSONCoding {
    public static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
    public static let decoder = JSONDecoder()
}

extension MessageBody {
    /// The device a message names, for device erasure (which deletes exactly the messages naming that
    /// device, decoded, never by a substring): the reports and their verified forms up to
    /// attribution-winner. Nothing after it names a device.
    public var deviceIdentifier: String? {
        switch self {
        case .impressionReported(let report): report.deviceIdentifier
        case .conversionReported(let report): report.deviceIdentifier
        case .updateReported(let report), .updateVerified(let report): report.deviceIdentifier
        case .impressionVerified(let impression): impression.deviceIdentifier
        case .conversionVerified(let conversion): conversion.report.deviceIdentifier
        case .activityReported(let report), .activityVerified(let report): report.deviceIdentifier
        case .rejected, .conversionAttributed, .updateAttributed, .conversionSuperseded, .windowClosed, .postbackDue,
            .deliveryRetry, .activityAttributed, .testPostbacksRequested:
            nil
        }
    }
}
