import CryptoPrimitives

/// Where each postback's `postback-identifier` and random delay come from: a keyed hash (HMAC-SHA256)
/// of its conversion, window and contender (the ad network, the impression, winner or not). The same
/// postback planned twice has one identifier and, prepared at the same moment, one delay, so a plan
/// Redis lost in a failover (its primary had written it but not replicated it) is planned again from
/// the same attribution exactly as before, after the first plan's postback may have been sent: a
/// receiver deduplicating on the identifier sees it once, and no second draw narrows down when the
/// conversion happened. The key keeps both unpredictable and the identifiers unlinkable: without it
/// nobody, the app that knows its conversions' event ids included, can tell which conversion or window
/// an identifier is for, or what delay a postback will get.
public struct PostbackIdentifiers: Sendable {
    let key: [UInt8]

    /// `key`: the scheduler's secret (`scheduler:postback-identifier-key`, 32 random bytes).
    public init(key: [UInt8]) {
        self.key = key
    }

    /// Identifiers under a fresh random key: a plan's identifiers then stay unlinkable but are not
    /// stable across processes (tests and the rule-level runner).
    public static func ephemeral() -> Self {
        var random = KernelRandom()
        return Self(key: (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) })
    }

    /// The identifier of the postback for window `window` of `conversion` to `impression`'s network.
    public func identifier(conversion: String, window: Int, impression: AttributedImpression, didWin: Bool) -> String {
        RandomUUID.shaped(hash(["postback-identifier", conversion, "\(window)"] + contender(impression, didWin)))
    }

    /// The random source of that postback's delay when prepared at `preparedAt` (a window's end or its
    /// lock): prepared again at the same moment, it draws the same delay; locked late, a new one.
    public func delayDraws(
        conversion: String, window: Int, impression: AttributedImpression, didWin: Bool, preparedAt: Milliseconds
    ) -> KeyedDraws {
        KeyedDraws(key: key, seed: ["postback-delay", conversion, "\(window)", "\(preparedAt)"] + contender(impression, didWin))
    }

    private func contender(_ impression: AttributedImpression, _ didWin: Bool) -> [String] {
        [impression.adNetworkIdentifier.rawValue, impression.impressionIdentifier, didWin ? "won" : "did-not-win"]
    }

    private func hash(_ parts: [String]) -> [UInt8] {
        HMACSHA256.authenticationCode(for: Array(parts.joined(separator: "\n").utf8), key: key)
    }
}

/// Draws from a keyed hash in counter mode (HMAC-SHA256 of the seed and the draw's number): as
/// unpredictable as the system generator to anyone without the key, and the same for the same seed.
public struct KeyedDraws: RandomNumberGenerator {
    private let key: [UInt8]
    private let seed: [UInt8]
    private var counter: UInt64 = 0

    init(key: [UInt8], seed: [String]) {
        self.key = key
        self.seed = Array(seed.joined(separator: "\n").utf8)
    }

    public mutating func next() -> UInt64 {
        counter += 1
        var message = seed
        withUnsafeBytes(of: counter.bigEndian) { message += $0 }
        let code = HMACSHA256.authenticationCode(for: message, key: key)
        return code.prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }
}
