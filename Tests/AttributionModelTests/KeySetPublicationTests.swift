import AttributionModel
import Testing

/// Which published keys the JWKS serves, and a dead letter's replay.
@Suite struct KeySetPublicationTests {
    static let cases: [(lastSigned: Milliseconds?, served: Bool)] = [
        (nil, true),  // nobody reported on it yet
        (1_000, true),  // signed with just now
        (1_000 - 500, true),  // retired exactly `grace` ago: still served
        (1_000 - 501, false),  // past the grace
    ]

    @Test(arguments: cases)
    func servedWhileSignedWithOrWithinGrace(lastSigned: Milliseconds?, served: Bool) {
        let keys = KeySetPublication.served(
            published: ["a": "{\"kid\":\"a\"}"], lastSigned: lastSigned.map { ["a": $0] } ?? [:], now: 1_000, grace: 500)
        #expect(keys == (served ? ["{\"kid\":\"a\"}"] : []))
    }

    @Test func aReplayStartsAFreshSeries() {
        var dead = DeliveryRetry(
            postbackIdentifier: "p", url: "https://x.example/", body: "{}", attempts: 10, firstAttemptAt: 5,
            lastError: "HTTP 500",
            order: PostbackPlanTestsOrder.make())
        dead.replayed = nil
        let replay = dead.replay()
        #expect(replay.attempts == 0 && replay.lastError.isEmpty && replay.replayed == true)
        #expect(replay.postbackIdentifier == "p" && replay.body == "{}")
    }
}
