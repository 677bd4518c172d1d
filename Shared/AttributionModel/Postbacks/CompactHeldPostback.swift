/// The binary form of a held postback: the scheduler may hold millions for up to 35 + 6 days, so each
/// is one sorted-set member of about 80 bytes instead of a JSON envelope of about 600 (issue: compact
/// holding; `attribution-bench holding` measures the Redis bytes per held postback).
///
/// Layout (version 1): magic `0xC1` (never the first byte of JSON or UTF-8 text, so `Envelope.decode`
/// tells the forms apart), two flag bytes, then the fine value (if any), varints for the due time, the
/// advertised app and the publisher (if any), the postback id as 16 bytes (or a length-prefixed string
/// if it is not a lowercase UUID), and length-prefixed network id, source id, country code (if any),
/// marketplace (if any; empty means the App Store) and impression type (if not `app-impression`).
/// The magic byte is also the layout's version: a later layout takes another magic and a reader of its own.
public enum CompactHeldPostback {
    public static let magic: UInt8 = 0xC1

    public struct Malformed: Error, CustomStringConvertible {
        public let description: String
    }

    // First flag byte.
    static let didWin: UInt8 = 1 << 0
    static let development: UInt8 = 1 << 1
    static let skAdNetwork: UInt8 = 1 << 2
    static let view: UInt8 = 1 << 3
    static let hasMarketplace: UInt8 = 1 << 4
    static let hasPublisher: UInt8 = 1 << 5
    static let hasCountry: UInt8 = 1 << 6
    static let textIdentifier: UInt8 = 1 << 7
    // Second flag byte: sequence index (bits 0–1), conversion type (2–3), coarse value (4–5), then:
    static let hasFine: UInt8 = 1 << 6
    static let otherImpressionType: UInt8 = 1 << 7

    static let conversionTypes: [ConversionType] = [.download, .redownload, .reengagement]
    static let coarseValues: [CoarseConversionValue?] = [nil, .low, .medium, .high]

    public static func encode(_ order: PostbackOrder, dueAt: Milliseconds) -> [UInt8] {
        let payload = order.payload
        let uuid = uuidBytes(payload.postbackIdentifier)
        var first: UInt8 = 0
        if payload.didWin { first |= didWin }
        if order.isDevelopment { first |= development }
        if order.impressionKind == .skAdNetwork { first |= skAdNetwork }
        if order.adInteractionType == .view { first |= view }
        if payload.marketplaceIdentifier != nil { first |= hasMarketplace }
        if payload.publisherItemIdentifier != nil { first |= hasPublisher }
        if order.countryCode != nil { first |= hasCountry }
        if uuid == nil { first |= textIdentifier }
        var second = UInt8(payload.postbackSequenceIndex & 0b11)
        second |= UInt8(conversionTypes.firstIndex(of: payload.conversionType)!) << 2
        second |= UInt8(coarseValues.firstIndex(of: order.coarseConversionValue)!) << 4
        if order.conversionValue != nil { second |= hasFine }
        if payload.impressionType != ImpressionPayload.appImpression { second |= otherImpressionType }

        var bytes: [UInt8] = [magic, first, second]
        bytes.reserveCapacity(96)
        if let fine = order.conversionValue { bytes.append(UInt8(clamping: fine)) }
        appendVarint(UInt64(bitPattern: dueAt), to: &bytes)
        appendVarint(UInt64(payload.advertisedItemIdentifier), to: &bytes)
        if let publisher = payload.publisherItemIdentifier { appendVarint(UInt64(publisher), to: &bytes) }
        if let uuid { bytes += uuid } else { appendText(payload.postbackIdentifier, to: &bytes) }
        appendText(payload.adNetworkIdentifier.rawValue, to: &bytes)
        appendText(payload.sourceIdentifier, to: &bytes)
        if let country = order.countryCode { appendText(country, to: &bytes) }
        if let marketplace = payload.marketplaceIdentifier {
            appendText(marketplace == PostbackPayload.appStoreMarketplace ? "" : marketplace, to: &bytes)
        }
        if payload.impressionType != ImpressionPayload.appImpression { appendText(payload.impressionType, to: &bytes) }
        return bytes
    }

    public static func decode(_ bytes: [UInt8]) throws(Malformed) -> (order: PostbackOrder, dueAt: Milliseconds) {
        var reader = Reader(bytes: bytes)
        guard try reader.byte() == magic else { throw Malformed(description: "not a compact held postback") }
        let first = try reader.byte()
        let second = try reader.byte()
        let fine = second & hasFine != 0 ? Int(try reader.byte()) : nil
        let dueAt = Milliseconds(bitPattern: try reader.varint())
        let app = ItemIdentifier(try reader.varint())
        let publisher = first & hasPublisher != 0 ? ItemIdentifier(try reader.varint()) : nil
        let identifier = first & textIdentifier != 0 ? try reader.text() : RandomUUID.text(try reader.take(16))
        guard let network = AdNetworkIdentifier(try reader.text()) else {
            throw Malformed(description: "invalid ad network id")
        }
        let source = try reader.text()
        let country = first & hasCountry != 0 ? try reader.text() : nil
        let marketplace = first & hasMarketplace != 0 ? try reader.text() : nil
        let impressionType = second & otherImpressionType != 0 ? try reader.text() : ImpressionPayload.appImpression
        guard reader.isAtEnd else { throw Malformed(description: "trailing bytes") }
        let conversionIndex = Int((second >> 2) & 0b11)
        guard conversionIndex < conversionTypes.count else { throw Malformed(description: "invalid conversion type") }
        let payload = PostbackPayload(
            impressionType: impressionType, adNetworkIdentifier: network, sourceIdentifier: source,
            advertisedItemIdentifier: app, publisherItemIdentifier: publisher, conversionType: conversionTypes[conversionIndex],
            marketplaceIdentifier: marketplace.map { $0.isEmpty ? PostbackPayload.appStoreMarketplace : $0 },
            postbackIdentifier: identifier, postbackSequenceIndex: Int(second & 0b11), didWin: first & didWin != 0)
        let order = PostbackOrder(
            payload: payload, adInteractionType: first & view != 0 ? .view : .click, conversionValue: fine,
            coarseConversionValue: coarseValues[Int((second >> 4) & 0b11)], countryCode: country,
            isDevelopment: first & development != 0, impressionKind: first & skAdNetwork != 0 ? .skAdNetwork : .adAttributionKit)
        return (order, dueAt)
    }

    // MARK: - Pieces

    static func appendVarint(_ value: UInt64, to bytes: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    /// Length-prefixed UTF-8 (at most 255 bytes: ids, digits, codes; longer text is cut, which the
    /// model's own limits never reach).
    static func appendText(_ text: String, to bytes: inout [UInt8]) {
        let utf8 = Array(text.utf8.prefix(255))
        bytes.append(UInt8(utf8.count))
        bytes += utf8
    }

    /// The 16 bytes of a lowercase canonical UUID, or nil for any other text (kept verbatim then).
    static func uuidBytes(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count == 36, [8, 13, 18, 23].allSatisfy({ utf8[$0] == UInt8(ascii: "-") }) else { return nil }
        var bytes: [UInt8] = []
        var high: UInt8?
        for (offset, character) in utf8.enumerated() where ![8, 13, 18, 23].contains(offset) {
            let nibble: UInt8
            switch character {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = character - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = character - UInt8(ascii: "a") + 10
            default: return nil
            }
            if let h = high {
                bytes.append(h << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        return bytes
    }

    struct Reader {
        let bytes: [UInt8]
        var offset = 0

        var isAtEnd: Bool { offset == bytes.count }

        mutating func byte() throws(Malformed) -> UInt8 {
            guard offset < bytes.count else { throw Malformed(description: "truncated") }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func take(_ count: Int) throws(Malformed) -> ArraySlice<UInt8> {
            guard count <= bytes.count - offset else { throw Malformed(description: "truncated") }
            defer { offset += count }
            return bytes[offset..<offset + count]
        }

        mutating func varint() throws(Malformed) -> UInt64 {
            var value: UInt64 = 0
            for shift in stride(from: 0, to: 64, by: 7) {
                let byte = try byte()
                value |= UInt64(byte & 0x7F) << UInt64(shift)
                if byte & 0x80 == 0 { return value }
            }
            throw Malformed(description: "varint too long")
        }

        mutating func text() throws(Malformed) -> String {
            let count = Int(try byte())
            guard let text = String(validating: try take(count), as: UTF8.self) else {
                throw Malformed(description: "invalid UTF-8")
            }
            return text
        }
    }
}
