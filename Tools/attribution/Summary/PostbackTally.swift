import AttributionModel

/// Postbacks counted per ad network, winning and non-winning, by postback-sequence-index (window 0/1/2).
struct PostbackTally: Codable, Sendable, Equatable {
    struct Counts: Codable, Sendable, Equatable {
        /// Index = postback-sequence-index.
        var winning = [0, 0, 0]
        var nonWinning = [0, 0, 0]
        var total: Int { winning.reduce(0, +) + nonWinning.reduce(0, +) }

        mutating func add(_ payload: PostbackPayload) {
            if payload.didWin {
                winning[payload.postbackSequenceIndex] += 1
            } else {
                nonWinning[payload.postbackSequenceIndex] += 1
            }
        }

        enum CodingKeys: String, CodingKey {
            case winning
            case nonWinning = "non-winning"
            case total
        }

        init() {}

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            winning = try container.decode([Int].self, forKey: .winning)
            nonWinning = try container.decode([Int].self, forKey: .nonWinning)
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(winning, forKey: .winning)
            try container.encode(nonWinning, forKey: .nonWinning)
            try container.encode(total, forKey: .total)
        }
    }

    struct Row: Codable, Sendable, Equatable {
        var adNetworkIdentifier: String
        var counts: Counts

        enum CodingKeys: String, CodingKey {
            case adNetworkIdentifier = "ad-network-identifier"
            case counts = "postbacks"
        }
    }

    struct InvalidIndex: Error, CustomStringConvertible {
        var line: Int
        var index: Int
        var description: String { "line \(line): postback-sequence-index \(index) is not 0, 1 or 2" }
    }

    /// Sorted by ad network id so reports diff cleanly between runs.
    var adNetworks: [Row] = []
    var totals = Counts()

    enum CodingKeys: String, CodingKey {
        case adNetworks = "ad-networks"
        case totals
    }

    init() {}

    init(payloads: [(line: Int, payload: PostbackPayload)]) throws {
        var byNetwork: [AdNetworkIdentifier: Counts] = [:]
        for (line, payload) in payloads {
            guard (0..<3).contains(payload.postbackSequenceIndex) else {
                throw InvalidIndex(line: line, index: payload.postbackSequenceIndex)
            }
            byNetwork[payload.adNetworkIdentifier, default: Counts()].add(payload)
            totals.add(payload)
        }
        adNetworks = byNetwork.sorted { $0.key < $1.key }.map { Row(adNetworkIdentifier: $0.key.rawValue, counts: $0.value) }
    }
}
