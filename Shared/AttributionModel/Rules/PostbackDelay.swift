/// The random hold before a postback is sent, so the send time reveals nothing about the conversion.
public enum PostbackDelay {
    /// A development postback's fixed delay.
    public static let developmentDelay: Duration = .minutes(5)

    /// Uniform ranges: first postback 24–48 h, later ones 24–144 h. Development postbacks are not
    /// random: developer mode "removes time randomization … to make it time-deterministic" (WWDC), so
    /// each leaves exactly `developmentDelay` after its window ends or is locked (spec §7).
    public static func range(sequenceIndex: Int, development: Bool) -> ClosedRange<Duration> {
        if development { return developmentDelay...developmentDelay }
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
