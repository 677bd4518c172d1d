/// The random hold before a postback is sent, so the send time reveals nothing about the conversion.
public enum PostbackDelay {
    /// Uniform ranges: first postback 24–48 h, later ones 24–144 h, development 5–10 minutes.
    public static func range(sequenceIndex: Int, development: Bool) -> ClosedRange<Duration> {
        if development { return .minutes(5) ... .minutes(10) }
        return sequenceIndex == 0 ? .hours(24) ... .hours(48) : .hours(24) ... .hours(144)
    }

    /// Draws a scaled delay in milliseconds. Pass `SystemRandomNumberGenerator` in production: on
    /// Linux it reads the kernel's CSPRNG (getrandom), as the privacy guarantee requires.
    public static func draw(
        sequenceIndex: Int, development: Bool, policy: TimePolicy, using generator: inout some RandomNumberGenerator
    ) -> Milliseconds {
        let range = range(sequenceIndex: sequenceIndex, development: development)
        let low = policy.milliseconds(range.lowerBound)
        let high = policy.milliseconds(range.upperBound)
        return Milliseconds.random(in: low...high, using: &generator)
    }
}
