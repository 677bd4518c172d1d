import Foundation

/// The keys `CompactCoding` version 2 writes as a number instead of their text.
///
/// Keys were about a quarter of every byte the pipeline wrote to Redis, and so to its append-only
/// file: an envelope repeats `advertised-item-identifier`, `device-identifier`, `received-at`… in every
/// message, a device's state repeats `conversionIdentifier` per conversion. Redis spends CPU on every
/// byte it is sent and again when it rewrites its append-only file. Version 2 writes key
/// number `n` of this table as the varint `2n + 1`, one byte for the first 64; any other key as the
/// varint `2 × length`, then its UTF-8.
///
/// **Append only.** A key's number is its place in `names`, and blobs in Redis carry the numbers: never
/// reorder, rename or remove an entry. A new key goes at the end; a binary that does not know its
/// number skips that entry, as it skips any key it does not ask for. `CompactCodingTests` pins the table.
enum CompactKeys {
    /// Most frequent first (counted over an all-five-services run's append-only file).
    static let names: [StaticString] = [
        "time", "type", "body", "id", "schema", "advertised-item-identifier", "device-identifier", "received-at",
        "conversion-identifier", "conversion-type", "country-code", "ad-network-identifier",
        "publisher-item-identifier", "source-identifier", "impression-identifier", "kind", "interaction", "loaded-at",
        "update", "fineConversionValue", "coarseConversionValue", "lockPostback", "payload", "impression-type",
        "timestamp", "impressions", "conversions", "pendingUpdates", "settling", "pendingActivities", "window", "report",
        "app", "item-identifier", "conversionIdentifier", "conversionType", "conversion-time", "winner",
        "interaction-type", "non-winners", "fine", "coarse", "event-identifier", "settlesAfter", "attribution", "crowd",
        "tier", "sourceIdentifierDigits", "countryIsTierThree", "firstUpdateAt", "reported", "windowsDone",
        "impression", "installedAt", "closed", "at", "values", "postbacks", "contender", "identifier", "dueAt",
        "postback-identifier", "destination", "url",
        // From here on two bytes each (2n + 1 ≥ 128).
        "attempts", "order", "marketplace-identifier", "postback-sequence-index", "did-win", "ad-interaction-type",
        "conversion-value", "development", "impression-kind", "first-attempt-at", "last-error", "activityTotals",
        "begin", "coarse-conversion-value", "conversion-tag", "conversionTag", "conversionTypes",
        "eligible-for-re-engagement", "jws-string", "schemaValues", "valueSchema", "heldByVerifier",
    ]

    /// Open addressing: each slot holds a key number, or -1.
    private static let slots: [Int16] = {
        var slots = [Int16](repeating: -1, count: 256)
        for (number, name) in names.enumerated() {
            var index = name.withUTF8Buffer { slot(of: $0) }
            while slots[index] >= 0 { index = (index + 1) & 255 }
            slots[index] = Int16(number)
        }
        return slots
    }()

    /// A key's first slot: its length and its first, middle and last bytes mixed by one multiplication.
    /// Cheaper than hashing every byte (every key of every blob is looked up), and it spreads the names
    /// over the 256 slots with 24 extra probes in all.
    private static func slot(of key: UnsafeBufferPointer<UInt8>) -> Int {
        guard let first = key.first, let last = key.last else { return 0 }
        let sample =
            UInt32(truncatingIfNeeded: key.count) | UInt32(first) << 8 | UInt32(last) << 16
            | UInt32(key[key.count / 2]) << 24
        return Int((sample &* 0x9E37_79B1) >> 24)
    }

    /// The number of the key whose UTF-8 is `key`, nil when it is not in the table.
    static func number(of key: UnsafeBufferPointer<UInt8>) -> Int? {
        guard !key.isEmpty, let start = key.baseAddress else { return nil }
        var index = slot(of: key)
        while true {
            let number = Int(slots[index])
            guard number >= 0 else { return nil }
            let name = names[number]
            if name.utf8CodeUnitCount == key.count, memcmp(name.utf8Start, start, key.count) == 0 { return number }
            index = (index + 1) & 255
        }
    }

    /// The UTF-8 of key `number`, nil for a number past the table's end (a newer binary's key).
    static func text(_ number: UInt64) -> UnsafeBufferPointer<UInt8>? {
        guard number < UInt64(names.count) else { return nil }
        let name = names[Int(number)]
        return UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
    }
}
