/// The dispatcher signs a postback's payload as JSON and POSTs a JSON body, both with the bytes
/// `JSONCoding.encoder` writes (sorted keys, slashes unescaped); JSONEncoder was about a twentieth of
/// its CPU per delivery. These write the same bytes with the message codec's writer (the payload is the
/// one `postback.due` carries). Text JSONEncoder would escape (or non-ASCII text) returns nil, and the
/// caller uses JSONEncoder. `PostbackPlainJSONTests` compares the bytes with JSONEncoder's.
extension PostbackPayload {
    public func plainJSON() -> [UInt8]? {
        var writer = MessageJSONWriter(capacity: 320)
        write(to: &writer)
        return writer.failed ? nil : writer.bytes
    }
}

extension PostbackBody {
    public func plainJSON() -> [UInt8]? {
        var writer = MessageJSONWriter(capacity: jwsString.utf8.count + 160)
        writer.object { w in
            w.field("ad-interaction-type", adInteractionType)
            w.field("coarse-conversion-value", ifPresent: coarseConversionValue)
            w.field("conversion-value", ifPresent: conversionValue)
            w.field("country-code", ifPresent: countryCode)
            w.field("jws-string", jwsString)
        }
        return writer.failed ? nil : writer.bytes
    }
}
