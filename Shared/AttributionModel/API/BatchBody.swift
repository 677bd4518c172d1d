import Foundation

/// A batch request's body cut into its items, without decoding them: each item is then decoded,
/// validated and answered on its own, so one bad item costs only its own result. A JSON array
/// (`application/json`) or NDJSON (`application/x-ndjson`, one object per line).
///
/// Only the structure is scanned here (brackets, strings and escapes), never the values: an item that
/// is not valid JSON inside still gets its own `invalid-json` answer. The body as a whole is refused
/// only when its items cannot be told apart.
public enum BatchBody {
    /// The most items one request may carry.
    public static let maximumItems = 1_000

    public enum Format: Sendable, Equatable {
        case jsonArray
        case ndjson

        /// The format a `Content-Type` names; JSON unless it says NDJSON.
        public init(contentType: String?) {
            let media = contentType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
            self = media == "application/x-ndjson" || media == "application/ndjson" ? .ndjson : .jsonArray
        }
    }

    /// The byte ranges of the items, in order.
    public static func items(in body: Data, format: Format) throws(RequestProblem) -> [Range<Int>] {
        let ranges =
            switch format {
            case .jsonArray: try arrayItems(Array(body))
            case .ndjson: lineItems(Array(body))
            }
        guard !ranges.isEmpty else { throw RequestProblem(.invalidBatch, "a batch holds 1–\(maximumItems) items; this one none") }
        guard ranges.count <= maximumItems else {
            throw RequestProblem(.batchTooLarge, "a batch holds at most \(maximumItems) items; this one \(ranges.count)")
        }
        return ranges.map { $0.lowerBound + body.startIndex..<$0.upperBound + body.startIndex }
    }

    private static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 }

    /// Non-blank lines, without their line ends.
    static func lineItems(_ bytes: [UInt8]) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        var start = 0
        for index in 0...bytes.count where index == bytes.count || bytes[index] == 0x0A {
            var lower = start
            var upper = index
            while lower < upper, isSpace(bytes[lower]) { lower += 1 }
            while upper > lower, isSpace(bytes[upper - 1]) { upper -= 1 }
            if lower < upper { ranges.append(lower..<upper) }
            start = index + 1
        }
        return ranges
    }

    /// The elements of a top-level JSON array.
    static func arrayItems(_ bytes: [UInt8]) throws(RequestProblem) -> [Range<Int>] {
        var index = 0
        func skipSpace() { while index < bytes.count, isSpace(bytes[index]) { index += 1 } }
        func malformed(_ detail: String) -> RequestProblem {
            RequestProblem(.invalidBatch, "\(detail) (at byte \(index)); a batch is a JSON array of event objects, or NDJSON")
        }
        skipSpace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "[") else { throw malformed("the body is not a JSON array") }
        index += 1
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            skipSpace()
            guard index == bytes.count else { throw malformed("text after the array") }
            return []
        }
        var ranges: [Range<Int>] = []
        while true {
            skipSpace()
            let start = index
            try skipValue(bytes, &index)
            guard index > start else { throw malformed("an item is missing") }
            ranges.append(start..<index)
            guard ranges.count <= maximumItems else { return ranges }
            skipSpace()
            guard index < bytes.count else { throw malformed("the array is not closed") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard bytes[index] == UInt8(ascii: "]") else { throw malformed("items are separated by commas") }
            index += 1
            skipSpace()
            guard index == bytes.count else { throw malformed("text after the array") }
            return ranges
        }
    }

    /// Moves past one value: a balanced object or array, a string, or a bare token (number, literal).
    private static func skipValue(_ bytes: [UInt8], _ index: inout Int) throws(RequestProblem) {
        var depth = 0
        var inString = false
        while index < bytes.count {
            let byte = bytes[index]
            if inString {
                if byte == UInt8(ascii: "\\") {
                    index += 1
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                    if depth == 0 {
                        index += 1
                        return
                    }
                }
            } else {
                switch byte {
                case UInt8(ascii: "\""): inString = true
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    if depth == 0 { return }
                    depth -= 1
                    if depth == 0 {
                        index += 1
                        return
                    }
                case UInt8(ascii: ","):
                    if depth == 0 { return }
                default:
                    if depth == 0, isSpace(byte) { return }
                }
            }
            index += 1
        }
        if inString || depth > 0 {
            throw RequestProblem(
                .invalidBatch, "the body ends inside an item; a batch is a JSON array of event objects, or NDJSON")
        }
    }
}

/// One item of a batch: the single route's body plus its own optional `idempotency-key` member,
/// decoded in one pass.
public struct BatchItem<Event: Decodable>: Decodable {
    public var event: Event
    public var idempotencyKey: String?

    enum CodingKeys: String, CodingKey { case idempotencyKey = "idempotency-key" }

    public init(from decoder: any Decoder) throws {
        event = try Event(from: decoder)
        idempotencyKey = try decoder.container(keyedBy: CodingKeys.self).decodeIfPresent(String.self, forKey: .idempotencyKey)
    }
}
