/// `AdAttributionKitConfigurations › AttributionWindows`: a `global` entry and per-network entries,
/// each an `install` dict with `click` and/or `view` days. Precedence: network > global > default.
public struct AttributionWindowsConfiguration: Sendable, Hashable, Codable {
    public struct Install: Sendable, Hashable, Codable {
        public var click: Int?
        public var view: Int?
        /// Drops this network's impressions of that type. Honoured per network only, not in `global`.
        public var ignoreInteractionType: InteractionType?

        public init(click: Int? = nil, view: Int? = nil, ignoreInteractionType: InteractionType? = nil) {
            self.click = click
            self.view = view
            self.ignoreInteractionType = ignoreInteractionType
        }
    }

    struct Entry: Sendable, Hashable, Codable {
        var install: Install
    }

    public var global: Install?
    public var networks: [AdNetworkIdentifier: Install]

    public init(global: Install? = nil, networks: [AdNetworkIdentifier: Install] = [:]) {
        self.global = global
        self.networks = networks
    }

    /// Apple's defaults and allowed ranges, in days.
    public static let defaultClickDays = 30
    public static let defaultViewDays = 1
    public static let clickDaysRange: ClosedRange<Int> = 1...30
    public static let viewDaysRange: ClosedRange<Int> = 1...7

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: AnyKey.self)
        var global: Install?
        var networks: [AdNetworkIdentifier: Install] = [:]
        for key in container.allKeys {
            let entry = try container.decode(Entry.self, forKey: key)
            if key.stringValue == "global" {
                global = entry.install
            } else {
                guard let network = AdNetworkIdentifier(key.stringValue) else {
                    throw DecodingError.dataCorruptedError(
                        forKey: key, in: container, debugDescription: "not a lowercase ad network id")
                }
                networks[network] = entry.install
            }
        }
        self.global = global
        self.networks = networks
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: AnyKey.self)
        if let global { try container.encode(Entry(install: global), forKey: AnyKey("global")) }
        for (network, install) in networks { try container.encode(Entry(install: install), forKey: AnyKey(network.rawValue)) }
    }
}

/// `AdAttributionKitConfigurations › AttributionCooldown`, hours 0–720.
public struct AttributionCooldown: Sendable, Hashable, Codable {
    public var installCooldownHours: Int?
    public var reengagementCooldownHours: Int?
    public static let hoursRange: ClosedRange<Int> = 0...720

    public init(installCooldownHours: Int? = nil, reengagementCooldownHours: Int? = nil) {
        self.installCooldownHours = installCooldownHours
        self.reengagementCooldownHours = reengagementCooldownHours
    }

    enum CodingKeys: String, CodingKey {
        case installCooldownHours = "install-cooldown-hours"
        case reengagementCooldownHours = "re-engagement-cooldown-hours"
    }
}

struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
