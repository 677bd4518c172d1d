/// A token bucket: `rate` tokens a second, at most `burst` held. Each event takes a token; an event
/// finding none is refused, and `retryAfter` says when one will be there. Time is a parameter
/// (milliseconds), so the rule is tested without a clock.
public struct TokenBucket: Sendable, Equatable {
    public let rate: Double
    public let burst: Double
    public private(set) var tokens: Double
    public private(set) var updatedAt: Milliseconds

    /// A full bucket at `now`.
    public init(rate: Double, burst: Double, now: Milliseconds) {
        self.rate = rate
        self.burst = max(1, burst)
        self.tokens = max(1, burst)
        self.updatedAt = now
    }

    /// Takes up to `count` tokens at `now`; answers how many it could take (the first ones are granted).
    public mutating func take(_ count: Int, now: Milliseconds) -> Int {
        refill(now)
        let granted = min(count, Int(tokens.rounded(.down)))
        tokens -= Double(granted)
        return max(0, granted)
    }

    /// Milliseconds until one token is there (0 when one is).
    public func retryAfter(now: Milliseconds) -> Milliseconds {
        var copy = self
        copy.refill(now)
        guard copy.tokens < 1, rate > 0 else { return 0 }
        return Milliseconds(((1 - copy.tokens) / rate * 1_000).rounded(.up))
    }

    /// Whether the bucket is full at `now`: it then holds nothing a fresh bucket would not, and can be forgotten.
    public func isFull(now: Milliseconds) -> Bool {
        var copy = self
        copy.refill(now)
        return copy.tokens >= burst
    }

    private mutating func refill(_ now: Milliseconds) {
        guard now > updatedAt else { return }
        tokens = min(burst, tokens + Double(now - updatedAt) / 1_000 * rate)
        updatedAt = now
    }
}
