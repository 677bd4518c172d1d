import RedisStreams
import Testing

@Suite("ClusterTopology: parsing CLUSTER SLOTS")
struct ClusterTopologyTests {
    typealias Node = ClusterTopology.Node

    /// One `[host, port, id, metadata]` node entry as Redis 7 sends it.
    static func node(_ host: String, _ port: Int64, _ id: String, hostname: String? = nil) -> RedisReply {
        var metadata: [RedisReply] = []
        if let hostname { metadata = [.bulk(Array("hostname".utf8)), .bulk(Array(hostname.utf8))] }
        return .array([.bulk(Array(host.utf8)), .integer(port), .bulk(Array(id.utf8)), .array(metadata)])
    }

    static let reply = RedisReply.array([
        .array([.integer(0), .integer(5460), node("10.0.0.1", 7000, "a"), node("10.0.0.4", 7003, "d")]),
        .array([.integer(5461), .integer(10922), node("", 7001, "b"), node("10.0.0.5", 7004, "e")]),
        .array([
            .integer(10923), .integer(16000), node("redis-c.internal", 7002, "c", hostname: "redis-c.internal"),
        ]),
        .array([.integer(16001), .integer(16001), node("10.0.0.1", 7000, "a")]),
        .array([.integer(16002), .integer(16383), node("?", 7009, "z")]),
    ])

    @Test("slot ranges map to primaries and replicas")
    func parses() throws {
        let topology = try ClusterTopology(slotsReply: Self.reply, connectedHost: "seed.local")
        #expect(topology.node(forSlot: 0)?.address == "10.0.0.1:7000")
        #expect(topology.node(forSlot: 0)?.id == "a")
        #expect(topology.node(forSlot: 5460)?.address == "10.0.0.1:7000")
        #expect(topology.node(forSlot: 5461)?.address == "seed.local:7001", "empty host: the address we connected to")
        #expect(topology.node(forSlot: 12_000)?.address == "redis-c.internal:7002", "host names are kept")
        #expect(topology.node(forSlot: 16_001)?.address == "10.0.0.1:7000", "a primary may serve several ranges")
        #expect(topology.node(forSlot: 16_383) == nil, "an unknown endpoint (?) serves nothing")
        #expect(topology.node(forSlot: 16_384) == nil)
        #expect(topology.node(forSlot: -1) == nil)
        #expect(topology.primaries.map(\.address) == ["10.0.0.1:7000", "seed.local:7001", "redis-c.internal:7002"])
        #expect(topology.replicas.map(\.address) == ["10.0.0.4:7003", "10.0.0.5:7004"])
        #expect(topology.ranges.count == 4)
        #expect(
            topology.ranges[0]
                == .init(
                    slots: 0...5460, primary: Node(host: "10.0.0.1", port: 7000, id: "a"),
                    replicas: [Node(host: "10.0.0.4", port: 7003, id: "d")]))
    }

    @Test("older replies without ids or metadata")
    func minimalNodes() throws {
        let reply = RedisReply.array([
            .array([.integer(0), .integer(16383), .array([.bulk(Array("127.0.0.1".utf8)), .integer(6379)])])
        ])
        let topology = try ClusterTopology(slotsReply: reply, connectedHost: "x")
        #expect(topology.node(forSlot: 9_999) == Node(host: "127.0.0.1", port: 6379))
        #expect(topology.replicas.isEmpty)
    }

    @Test(
        "malformed replies are rejected",
        arguments: [
            RedisReply.error("ERR This instance has cluster support disabled"),
            .array([.array([.integer(0), .integer(10)])]),
            .array([.array([.integer(10), .integer(0), .array([.bulk([49]), .integer(1)])])]),
            .array([.array([.integer(0), .integer(16384), .array([.bulk([49]), .integer(1)])])]),
            .array([.array([.integer(0), .integer(1), .array([.bulk([49])])])]),
            .array([.array([.integer(0), .integer(1), .array([.bulk([49]), .integer(0)])])]),
        ]
    )
    func rejects(_ reply: RedisReply) {
        #expect {
            try ClusterTopology(slotsReply: reply, connectedHost: "x")
        } throws: { error in
            (error as? RedisError)?.code == .unexpectedReply
        }
    }

    @Test("an empty reply is a cluster with no slots assigned yet")
    func empty() throws {
        let topology = try ClusterTopology(slotsReply: .array([]), connectedHost: "x")
        #expect(topology.primaries.isEmpty)
        #expect(topology.node(forSlot: 0) == nil)
    }
}
