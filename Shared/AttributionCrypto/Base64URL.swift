import Foundation

/// base64url without padding (RFC 7515 §2), as every JWS part is encoded. Byte tables instead of
/// Foundation's base64 plus string replacements: the verifier decodes three parts per impression, and
/// the replacements (NSString searches) cost more than the signature check itself.
public enum Base64URL {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    /// Each byte's 6-bit value; 0xFF for bytes outside the alphabet (`=`, `+`, `/` included).
    static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(value) }
        return table
    }()

    public static func encode(_ data: some DataProtocol) -> String {
        let bytes = Array(data)
        var text: [UInt8] = []
        text.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index < bytes.count {
            let count = min(3, bytes.count - index)
            var group: UInt32 = 0
            for offset in 0..<3 { group = group << 8 | UInt32(offset < count ? bytes[index + offset] : 0) }
            // 3 bytes give 4 characters; a final 1 or 2 bytes give 2 or 3 (no padding).
            for position in 0...count { text.append(alphabet[Int(group >> UInt32(18 - 6 * position) & 0x3F)]) }
            index += 3
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Nil for anything but unpadded base64url: other characters, `=` padding, or a length that no
    /// byte string encodes to (4n + 1).
    public static func decode(_ text: some StringProtocol) -> Data? {
        decode(bytes: text.utf8)
    }

    /// `decode(_:)` of text given as its UTF-8 bytes (a slice of a JWS, without making a String of it).
    public static func decode(bytes utf8: some Collection<UInt8>) -> Data? {
        guard utf8.count % 4 != 1 else { return nil }
        // Into an array first: appending byte by byte to Data costs a reference-count round trip each.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count * 3 / 4)
        var group: UInt32 = 0
        var bits = 0
        let valid = values.withUnsafeBufferPointer { table in
            for character in utf8 {
                let value = table[Int(character)]
                guard value != 0xFF else { return false }
                group = group << 6 | UInt32(value)
                bits += 6
                if bits >= 8 {
                    bits -= 8
                    bytes.append(UInt8(truncatingIfNeeded: group >> UInt32(bits)))
                }
            }
            return true
        }
        return valid ? Data(bytes) : nil
    }
}
