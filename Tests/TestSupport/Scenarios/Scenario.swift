import AttributionModel
import Foundation

/// A declarative attribution scenario (in the spirit of Chromium's attribution interop suite): inputs
/// with millisecond timestamps, and the attributions, refusals and postbacks they must produce. The same
/// files run against the pure rules (virtual time) and against the real pipeline (scaled time).
/// Files live in `Scenarios/*.json` at the repository root; `Scenarios/README.md` documents the format.
public struct Scenario: Codable, Sendable {
    /// One line: what the scenario proves.
    public var description: String
    /// The rule it proves (as listed in docs/concepts/attribution-rules.md).
    public var rule: String
    /// The advertised app's configuration: the same JSON the admin API takes (`IngestRequests.AdvertisedApp`).
    public var app: IngestRequests.AdvertisedApp?
    /// Crowd tier every conversion gets (0–3); default 3 (all fields), so values can be checked.
    public var tier: Int?
    /// When set (instead of `tier`): the `CROWD_TIER_THRESHOLDS` (tier 1, 2 and 3) under which crowds are
    /// counted for real from the scenario's own conversions, for rules about how crowds combine. The
    /// pipeline runner plays such a scenario on a pipeline of its own, so no other scenario's
    /// conversions count.
    public var thresholds: [Int]?
    /// The inputs, in any order in the file; runners apply them by `at` (ties: file order), unless
    /// `arrival` lists another order for delivery (shuffled arrival).
    public var events: [ScenarioEvent]
    /// Optional delivery order (indexes into `events`): the pipeline may see events in this order while
    /// their timestamps stay as written.
    public var arrival: [Int]?
    public var expected: ScenarioExpectations

    public static func load(_ url: URL) throws -> Scenario {
        try JSONDecoder().decode(Scenario.self, from: Data(contentsOf: url))
    }

    /// Every scenario file under `Scenarios/` at the repository root, sorted by name.
    public static func all(root: URL = ScenarioFiles.repositoryRoot) throws -> [(name: String, scenario: Scenario)] {
        let directory = root.appendingPathComponent("Scenarios")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".json") }.sorted()
        return try names.map { ($0, try load(directory.appendingPathComponent($0))) }
    }
}

public enum ScenarioFiles {
    public static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
}

/// One input. Exactly one of `impression`, `conversion`, `update` is set. `at` is virtual milliseconds
/// from the scenario's start (the runner adds its own base time).
public struct ScenarioEvent: Codable, Sendable {
    public var at: Milliseconds
    /// Device name within the scenario (default "device").
    public var device: String?
    public var impression: ScenarioImpression?
    public var conversion: ScenarioConversion?
    public var update: ScenarioUpdate?
}

public struct ScenarioImpression: Codable, Sendable {
    /// Scenario-local name, used by `expected` (the runner maps it to a UUID).
    public var id: String
    public var network: String
    /// "click" or "view". A click's interaction is at `at` (loaded 1 s before); a view ends at `at`
    /// (began 3 s before): the device-side rules pass unless a scenario sets `clickLoadedBefore` /
    /// `viewSeconds` to test them.
    public var interaction: InteractionType
    /// A view recorded in one call (Apple's `handleView()`): at `at`, with no begin, so neither the 2 s
    /// rule nor the one-open-view rule applies to it. Default false.
    public var oneCall: Bool?
    /// Publisher app item id; 0 = development impression. Default 5838492.
    public var publisher: ItemIdentifier?
    /// Default 5239.
    public var source: Int?
    public var eligibleForReengagement: Bool?
    /// "aak" (default) or "skan" (a SKAdNetwork 4.0 impression: fidelity 1 for click, 0 for view).
    public var kind: ImpressionKind?
    /// How long before `at` the impression was created (its timestamp); default 2 s.
    public var createdBefore: Milliseconds?
}

public struct ScenarioConversion: Codable, Sendable {
    /// Scenario-local name, used by `expected`.
    public var id: String
    public var type: ConversionType
    /// Default "US"; "absent": the conversion carries no country.
    public var country: String?
    /// An alternative marketplace's bundle id (default: none, the App Store).
    public var marketplace: String?
    /// A re-engagement's `reengagement-url`: the answer must give it back opened (`expected.openings`).
    public var url: String?
}

public struct ScenarioUpdate: Codable, Sendable {
    public var fine: Int
    public var coarse: CoarseConversionValue?
    public var lock: Bool?
    public var types: [ConversionKind]?
    /// The id of the re-engagement conversion whose tag this update carries (the runner substitutes
    /// the real tag).
    public var tagOf: String?
    /// True: sent in SKAdNetwork's shape (`fineValue`, `coarseValue`, `lockWindow`), as an app calling
    /// `updatePostbackConversionValue` reports it; it may then carry neither `types` nor `tagOf`.
    public var skadnetwork: Bool?
}

public struct ScenarioExpectations: Codable, Sendable {
    /// Every conversion that must be attributed, and no other.
    public var attributions: [ExpectedAttribution]
    /// Conversions that must not be attributed, with the reason (`ConversionEligibility.Refusal` raw
    /// values). The pipeline runner checks only that no postback comes for them.
    public var refusals: [ExpectedRefusal]?
    /// Every postback that must be sent, and no other (a runner fails on any extra one).
    public var postbacks: [ExpectedPostback]
    /// How many updates no conversion took within the time an update waits for one (2 days): updates in
    /// SKAdNetwork's shape ignored, and the others refused `conversion-not-found`. Checked by the rule
    /// runner only (the pipeline keeps a waiting update at least 10 minutes of wall clock).
    public var ignoredUpdates: Int?
    public var refusedUpdates: Int?
    /// Every re-engagement that gives a `url`: the URL it opens and whether a conversion was created.
    public var openings: [ExpectedOpening]?
}

/// A re-engagement's answer: its open URL (`{tag}` stands for the conversion tag the runner got) and,
/// checked by the rule runner only (the pipeline's answer says it only when asked to wait), its outcome.
public struct ExpectedOpening: Codable, Sendable {
    public var conversion: String
    public var url: String
    /// "created" or "not-created".
    public var outcome: String
    /// For "not-created": the refusal (`ConversionEligibility.Refusal` raw value).
    public var reason: String?

    /// `url` with the conversion's tag in place of `{tag}`.
    public func url(tag: String) -> String { url.replacingOccurrences(of: "{tag}", with: tag) }
}

public struct ExpectedAttribution: Codable, Sendable {
    public var conversion: String
    public var winner: String
    /// Non-winning impressions, in ranking order.
    public var nonWinners: [String]?
}

public struct ExpectedRefusal: Codable, Sendable {
    public var conversion: String
    public var reason: String
}

public struct ExpectedPostback: Codable, Sendable {
    public var conversion: String
    /// The impression it credits (its network, source id and interaction follow from it).
    public var impression: String
    public var didWin: Bool
    public var window: Int
    /// Fine and coarse value as sent (absent = not sent).
    public var fine: Int?
    public var coarse: CoarseConversionValue?
    /// Source id digits sent (2–4).
    public var sourceDigits: Int?
    /// The postback is prepared at this virtual time (a lock, a superseding conversion, or the window's
    /// end); it must be sent within its delay range after it (24–48 h for window 0, 24–144 h later,
    /// exactly 5 minutes for development).
    public var preparedAt: Milliseconds
    /// When set, the delay is not drawn but fixed: due exactly this many virtual ms after `preparedAt`
    /// (development postbacks: 300000), whatever the code's own delay range says.
    public var delay: Milliseconds?
    /// When set, the postback's `marketplace-identifier` must be exactly this.
    public var marketplace: String?
    /// When set, the postback's `country-code` must be exactly this, or be absent for "absent".
    public var country: String?
}

extension ExpectedPostback {
    /// What a postback's country code should be compared with: nil when the scenario states none.
    public func countryMismatch(_ actual: String?) -> String? {
        guard let country else { return nil }
        let expected = country == "absent" ? nil : country
        return actual == expected ? nil : "country-code \(actual ?? "absent"), expected \(country)"
    }
}
