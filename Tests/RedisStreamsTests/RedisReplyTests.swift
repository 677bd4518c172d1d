import Testing

@testable import RedisStreams

/// `RedisReply.int` reads a bulk string's bytes as `Int64(_:)` reads its text, without the string.
@Suite struct RedisReplyTests {
    @Test(arguments: [
        "0", "7", "-7", "+7", "007", "20541", "9223372036854775807", "-9223372036854775808",
        // Not integers, or out of range: nil both ways.
        "", "-", "+", "1.5", " 1", "1 ", "1e3", "0x10", "9223372036854775808", "-9223372036854775809",
        "99999999999999999999", "--1", "١٢",
    ])
    func bulkIntegersReadAsInt64ReadsText(_ text: String) {
        #expect(RedisReply.bulk(Array(text.utf8)).int == Int64(text))
    }

    @Test func otherRepliesKeepTheirMeaning() {
        #expect(RedisReply.integer(-3).int == -3)
        #expect(RedisReply.status("12").int == 12)
        #expect(RedisReply.null.int == nil)
        #expect(RedisReply.array([.bulk(Array("1".utf8))]).int == nil)
    }
}
