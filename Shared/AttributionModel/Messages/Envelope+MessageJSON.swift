/// The message codec's envelope: `{"body":…,"id":…,"schema":…,"time":…,"type":…}`, the bytes
/// `JSONCoding.encoder` writes, for the message types every campaign event passes through. The others
/// (refusals, retries, activity, test postbacks: rare, or carrying text that needs escaping) and any
/// value a writer leaves alone take the general path (`Envelope.encoded()`, `Envelope.decode`).
extension Envelope {
    /// The envelope's JSON, or nil for a type or a value left to the general writer.
    func messageJSON() -> [UInt8]? {
        var writer = MessageJSONWriter(capacity: 512)
        writer.object { w in
            w.key("body")
            switch body {
            case .impressionReported(let report): report.write(to: &w)
            case .conversionReported(let report): report.write(to: &w)
            case .updateReported(let report), .updateVerified(let report): report.write(to: &w)
            case .impressionVerified(let impression): impression.write(to: &w)
            case .conversionVerified(let conversion): conversion.write(to: &w)
            case .conversionAttributed(let attribution): attribution.write(to: &w)
            case .updateAttributed(let update): update.write(to: &w)
            case .conversionSuperseded(let superseded): superseded.write(to: &w)
            case .windowClosed(let closed): closed.write(to: &w)
            case .postbackDue(let order): order.write(to: &w)
            case .rejected, .deliveryRetry, .activityReported, .activityVerified, .activityAttributed,
                .testPostbacksRequested:
                w.failed = true
            }
            w.field("id", id)
            w.field("schema", schema)
            w.field("time", time)
            w.field("type", type)
        }
        return writer.failed ? nil : writer.bytes
    }

    /// The envelope `messageJSON()` wrote, or nil for anything else (see `MessageJSONReader`).
    static func fromMessageJSON(_ bytes: [UInt8]) -> Envelope? {
        bytes.withUnsafeBufferPointer { json in
            var reader = MessageJSONReader(json: json)
            var body: Range<Int>?
            var id: String?
            var schema: Int?
            var time: Milliseconds?
            var type: MessageType?
            do {
                try reader.object { r, key in
                    switch key {
                    case "body": try MessageJSONReader.once(&body, r.skipValue())
                    case "id": try MessageJSONReader.once(&id, r.string())
                    case "schema": try MessageJSONReader.once(&schema, r.integer())
                    case "time": try MessageJSONReader.once(&time, r.integer())
                    case "type": try MessageJSONReader.once(&type, r.value())
                    default: throw MessageJSONReader.Unread()
                    }
                }
                guard reader.atEnd, let body, let id, let schema, let time, let type else { return nil }
                var bodyReader = MessageJSONReader(json: UnsafeBufferPointer(rebasing: json[..<body.upperBound]))
                bodyReader.position = body.lowerBound
                guard let message = try MessageBody(type, json: &bodyReader), bodyReader.atEnd else { return nil }
                var envelope = Envelope(id: id, time: time, body: message)
                envelope.schema = schema
                return envelope
            } catch {
                return nil
            }
        }
    }
}

extension MessageBody {
    /// A body of `type` the message codec reads, or nil for a type it leaves to the general reader.
    fileprivate init?(_ type: MessageType, json r: inout MessageJSONReader) throws {
        switch type {
        case .impressionReported: self = .impressionReported(try ImpressionReport(json: &r))
        case .conversionReported: self = .conversionReported(try ConversionReport(json: &r))
        case .updateReported: self = .updateReported(try ValueUpdateReport(json: &r))
        case .impressionVerified: self = .impressionVerified(try VerifiedImpression(json: &r))
        case .conversionVerified: self = .conversionVerified(try VerifiedConversion(json: &r))
        case .updateVerified: self = .updateVerified(try ValueUpdateReport(json: &r))
        case .conversionAttributed: self = .conversionAttributed(try Attribution(json: &r))
        case .updateAttributed: self = .updateAttributed(try AttributedUpdate(json: &r))
        case .conversionSuperseded: self = .conversionSuperseded(try ConversionSuperseded(json: &r))
        case .windowClosed: self = .windowClosed(try WindowClosed(json: &r))
        case .postbackDue: self = .postbackDue(try PostbackOrder(json: &r))
        case .rejected, .deliveryRetry, .activityReported, .activityVerified, .activityAttributed, .testPostbacksRequested:
            return nil
        }
    }
}
