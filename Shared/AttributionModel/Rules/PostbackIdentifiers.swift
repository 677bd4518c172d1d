import Crypto

/// Where each postback's `postback-identifier` comes from: a keyed hash (HMAC-SHA256) of its conversion,
/// window and contender, shaped as a version-4 UUID. The same postback planned twice has one identifier,
/// so a receiver deduplicating on it sees it once: a plan Redis lost in a failover (its primary had
/// written it but not replicated it) is planned again from the same attribution, after the first plan's
/// postback may have been sent. The key keeps identifiers unlinkable: without it nobody, the app that
/// knows its conversions' event ids included, can tell which conversion or window an identifier is for.
public struct PostbackIdentifiers: Sendable {
    let key: SymmetricKey

    /// `key`: the scheduler's secret (`scheduler:postback-identifier-key`, 32 random bytes).
    public init(key: [UInt8]) {
        self.key = SymmetricKey(data: key)
    }

    /// Identifiers under a fresh random key: a plan's identifiers then stay unlinkable but are not
    /// stable across processes (tests and the rule-level runner).
    public static func ephemeral() -> Self {
        var random = KernelRandom()
        return Self(key: (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) })
    }

    /// The identifier of `contender`'s postback for window `window` of conversion `conversion`.
    public func identifier(conversion: String, window: Int, contender: Int) -> String {
        let message = Array("postback-identifier\n\(conversion)\n\(window)\n\(contender)".utf8)
        return RandomUUID.shaped(Array(HMAC<SHA256>.authenticationCode(for: message, using: key)))
    }
}
