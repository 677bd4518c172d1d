import RedisStreams
import Testing

@Suite("ClusterSlot: the Redis Cluster key → hash slot function")
struct ClusterSlotTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let key: String
        let slot: Int
        let why: String
        var testDescription: String { "\(self.key): \(self.why)" }
    }

    // Values from the cluster specification and from `CLUSTER KEYSLOT` on redis-server 7.0.
    static let cases: [Case] = [
        Case(key: "123456789", slot: 12_739, why: "the CRC16-XMODEM check value 0x31C3"),
        Case(key: "foo", slot: 12_182, why: "plain key"),
        Case(key: "", slot: 0, why: "empty key"),
        Case(key: "user1000", slot: 3_443, why: "plain key"),
        Case(key: "{user1000}.following", slot: 3_443, why: "tag only"),
        Case(key: "{user1000}.followers", slot: 3_443, why: "tag only"),
        Case(key: "foo{}{bar}", slot: 8_363, why: "empty first tag: whole key"),
        Case(key: "foo{{bar}}zap", slot: 4_015, why: "tag is `{bar`"),
        Case(key: "foo{bar}{zap}", slot: 5_061, why: "first tag only: `bar`"),
        Case(key: "{bar", slot: 4_015, why: "no closing brace: whole key"),
        Case(key: "{", slot: 4_092, why: "lone brace"),
        Case(key: "}", slot: 12_090, why: "lone closing brace"),
        Case(key: "{}", slot: 15_257, why: "empty tag: whole key"),
        Case(key: "ключ", slot: 10_303, why: "UTF-8 bytes are hashed"),
    ]

    @Test("known slots", arguments: cases)
    func knownSlot(_ known: Case) {
        #expect(ClusterSlot.slot(of: known.key) == known.slot)
        #expect(ClusterSlot.slot(of: Array(known.key.utf8)) == known.slot, "bytes and text agree")
    }

    @Test("hash tags")
    func hashTags() {
        #expect(ClusterSlot.hashTag(of: "{user1000}.following") == "user1000")
        #expect(ClusterSlot.hashTag(of: "foo{{bar}}zap") == "{bar")
        #expect(ClusterSlot.hashTag(of: "foo{bar}{zap}") == "bar")
        #expect(ClusterSlot.hashTag(of: "foo{}{bar}") == nil)
        #expect(ClusterSlot.hashTag(of: "foo{bar") == nil)
        #expect(ClusterSlot.hashTag(of: "plain") == nil)
        #expect(ClusterSlot.hashTag(of: Array("a{p07}:b".utf8)).map(Array.init) == Array("p07".utf8))
    }

    @Test("every slot is in range and keys spread over all of them")
    func range() {
        var seen = Set<Int>()
        for index in 0..<200_000 {
            let slot = ClusterSlot.slot(of: "key:\(index)")
            #expect((0..<ClusterSlot.count).contains(slot))
            seen.insert(slot)
        }
        #expect(seen.count == ClusterSlot.count)
    }
}
