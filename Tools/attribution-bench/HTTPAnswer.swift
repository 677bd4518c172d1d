import NIOCore

/// One HTTP/1.1 answer as `attribution-bench load` reads it off the wire: the status, the body, and whether
/// the server closes the connection after it. Only what ingest sends: a status line, headers with
/// `Content-Length` (or none, for an empty body), `Connection: close`. An answer with a
/// `Transfer-Encoding` is not read: the tool closes the connection and its request counts as failed.
struct HTTPAnswer {
    var status: Int
    var body: ByteBuffer?
    var closing: Bool

    enum Parsed {
        /// Not all of it has arrived yet; nothing was consumed.
        case incomplete
        /// Not an answer this tool can read.
        case malformed
        case answer(HTTPAnswer)
    }

    /// Reads one answer from the front of `buffer`, consuming it only when it is whole. Plain loops over
    /// the bytes: the tool reads tens of thousands of answers a second on the server's own cores.
    static func parse(_ buffer: inout ByteBuffer) -> Parsed {
        switch buffer.withUnsafeReadableBytes({ Head.parse($0) }) {
        case .incomplete: return .incomplete
        case .malformed: return .malformed
        case .head(let head):
            guard buffer.readableBytes >= head.size + head.length else { return .incomplete }
            buffer.moveReaderIndex(forwardBy: head.size)
            let body = head.length > 0 ? buffer.readSlice(length: head.length) : nil
            return .answer(HTTPAnswer(status: head.status, body: body, closing: head.closing))
        }
    }

    /// An answer's head: status line and the headers the tool reads.
    private struct Head {
        var size = 0
        var status = 0
        var length = 0
        var closing = false

        enum Parsed {
            case incomplete, malformed
            case head(Head)
        }

        static func parse(_ bytes: UnsafeRawBufferPointer) -> Parsed {
            guard let end = find(crlfcrlf, in: bytes, from: 0) else { return bytes.count > 16_384 ? .malformed : .incomplete }
            var head = Head(size: end + 4)
            // "HTTP/1.x NNN …"
            guard end >= 12, bytes[0] == UInt8(ascii: "H"), bytes[8] == UInt8(ascii: " ") else { return .malformed }
            for index in 9..<12 {
                let digit = Int(bytes[index]) - Int(UInt8(ascii: "0"))
                guard (0...9).contains(digit) else { return .malformed }
                head.status = head.status * 10 + digit
            }
            var line = (find(crlf, in: bytes, from: 0) ?? end) + 2
            while line < end {
                let lineEnd = find(crlf, in: bytes, from: line) ?? end
                guard let colon = (line..<lineEnd).first(where: { bytes[$0] == UInt8(ascii: ":") }) else { return .malformed }
                var value = colon + 1
                while value < lineEnd, bytes[value] == UInt8(ascii: " ") || bytes[value] == UInt8(ascii: "\t") { value += 1 }
                if matches("content-length", bytes, line..<colon) {
                    var length = 0
                    var digits = 0
                    for index in value..<lineEnd where bytes[index] != UInt8(ascii: " ") {
                        let digit = Int(bytes[index]) - Int(UInt8(ascii: "0"))
                        guard (0...9).contains(digit), digits < 12 else { return .malformed }
                        length = length * 10 + digit
                        digits += 1
                    }
                    guard digits > 0 else { return .malformed }
                    head.length = length
                } else if matches("transfer-encoding", bytes, line..<colon) {
                    return .malformed
                } else if matches("connection", bytes, line..<colon) {
                    head.closing = contains("close", bytes, value..<lineEnd)
                }
                line = lineEnd + 2
            }
            return .head(head)
        }
    }

    private static let crlf: [UInt8] = [13, 10]
    private static let crlfcrlf: [UInt8] = [13, 10, 13, 10]

    /// The first offset at or after `from` where `needle` starts.
    private static func find(_ needle: [UInt8], in bytes: UnsafeRawBufferPointer, from: Int) -> Int? {
        guard bytes.count >= needle.count else { return nil }
        var index = from
        while index <= bytes.count - needle.count {
            if bytes[index] == needle[0] {
                var matched = 1
                while matched < needle.count, bytes[index + matched] == needle[matched] { matched += 1 }
                if matched == needle.count { return index }
            }
            index += 1
        }
        return nil
    }

    /// Whether `range` of `bytes` is `name`, ignoring ASCII case.
    private static func matches(_ name: StaticString, _ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> Bool {
        guard range.count == name.utf8CodeUnitCount else { return false }
        let expected = UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
        for offset in 0..<range.count where bytes[range.lowerBound + offset] | 0x20 != expected[offset] { return false }
        return true
    }

    /// Whether `word` occurs in `range` of `bytes`, ignoring ASCII case.
    private static func contains(_ word: StaticString, _ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> Bool {
        let count = word.utf8CodeUnitCount
        guard range.count >= count else { return false }
        return (range.lowerBound...(range.upperBound - count)).contains { start in
            matches(word, bytes, start..<(start + count))
        }
    }

    /// The `reason` of a problem JSON body, read without a JSON decoder: the tool reads one per refused
    /// request, tens of thousands a second under overload. Reasons are kebab-case tokens (no escapes).
    static func reason(in body: ByteBuffer) -> String? {
        body.withUnsafeReadableBytes { bytes in
            guard let key = find(reasonKey, in: bytes, from: 0) else { return nil }
            var index = key + reasonKey.count
            while index < bytes.count, bytes[index] == UInt8(ascii: " ") { index += 1 }
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
            index += 1
            while index < bytes.count, bytes[index] == UInt8(ascii: " ") { index += 1 }
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
            let start = index + 1
            guard let end = (start..<bytes.count).first(where: { bytes[$0] == UInt8(ascii: "\"") }) else { return nil }
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
        }
    }

    private static let reasonKey = Array(#""reason""#.utf8)
}
