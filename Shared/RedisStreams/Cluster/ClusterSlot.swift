/// The Redis Cluster key → hash slot function, exactly as the cluster specification defines it.
///
/// A key lives in slot `CRC16(key) mod 16384`, CRC16 being the XMODEM variant (polynomial 0x1021,
/// initial value 0, no reflection). When the key has a hash tag — the bytes between the first `{` and
/// the first `}` after it, if there are any — only the tag is hashed, so `{user1000}.following` and
/// `{user1000}.followers` share a slot and can meet in one transaction or script.
public enum ClusterSlot {
    /// How many hash slots a cluster has.
    public static let count = 16_384

    /// The slot of a binary key.
    public static func slot(of key: some Collection<UInt8>) -> Int {
        let hashed = Self.hashTag(of: key)
        let crc = hashed.map { Self.crc16($0) } ?? Self.crc16(key)
        return Int(crc) & (Self.count - 1)
    }

    /// The slot of a key given as text (its UTF-8 bytes are hashed).
    public static func slot(of key: String) -> Int {
        Self.slot(of: key.utf8)
    }

    /// The hash tag of a key: the bytes between the first `{` and the first `}` after it; nil when
    /// there is no `{`, no `}` after it, or nothing between them (then the whole key is hashed).
    public static func hashTag<Key: Collection<UInt8>>(of key: Key) -> Key.SubSequence? {
        guard let open = key.firstIndex(of: UInt8(ascii: "{")) else { return nil }
        let start = key.index(after: open)
        guard let close = key[start...].firstIndex(of: UInt8(ascii: "}")), close != start else { return nil }
        return key[start..<close]
    }

    /// The hash tag of a key given as text; see `hashTag(of:)` for bytes.
    public static func hashTag(of key: String) -> String? {
        Self.hashTag(of: key.utf8).map { String(decoding: $0, as: UTF8.self) }
    }

    /// CRC16-CCITT (XMODEM), one table lookup per byte.
    static func crc16(_ bytes: some Sequence<UInt8>) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc = (crc << 8) ^ Self.table[Int(UInt8(truncatingIfNeeded: crc >> 8) ^ byte)]
        }
        return crc
    }

    /// `table[b]` is the CRC of the single byte `b` shifted through the polynomial 0x1021.
    private static let table: [UInt16] = (0..<256).map { byte in
        var crc = UInt16(byte) << 8
        for _ in 0..<8 {
            crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1
        }
        return crc
    }
}
