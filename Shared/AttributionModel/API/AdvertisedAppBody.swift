import Foundation

/// An advertised app's configuration as app teams have it: JSON, or their Info.plist (XML property
/// list), with the AdAttributionKit keys flat, inside `AdAttributionKit` (Apple's examples) or inside
/// `AdAttributionKitConfigurations`, under Apple's names or the spec's. Lives in the
/// model rather than in ingest so the fuzzer (Fuzz/) runs the very code ingest runs.
public enum AdvertisedAppBody {
    /// Why a body was refused: the reason ingest answers 400 with, and the plain words.
    public typealias Problem = RequestProblem

    public static func decode(_ bytes: Data, contentType: String?) throws -> IngestRequests.AdvertisedApp {
        try decodeReporting(bytes, contentType: contentType).app
    }

    /// The dictionaries Apple's examples and the spec put the keys in: `AdAttributionKit` (Apple's
    /// Info.plist layout) and `AdAttributionKitConfigurations`; keys may also sit at the top.
    public static let containers = ["AdAttributionKit", IngestRequests.AdvertisedApp.nestedContainer]

    /// Other spellings of keys this body reads under another name: `OptInForReengagementPostbackCopies`
    /// follows the label Xcode shows for the key ("Opt in for Reengagement Postback Copies"); Apple's
    /// Bundle Resources spell the key `EligibleForAdAttributionKitReengagementPostbackCopies`.
    public static let aliases = [
        "OptInForReengagementPostbackCopies": "EligibleForAdAttributionKitReengagementPostbackCopies"
    ]

    /// Apple's other spellings of keys inside a setting, by setting: WWDC25's slides write
    /// `reengagement-cooldown-hours`, "Configuring attribution rules for your app" the name stored.
    public static let memberAliases = [
        "AttributionCooldown": ["reengagement-cooldown-hours": "re-engagement-cooldown-hours"]
    ]

    /// The configuration, and the keys it carried that are not read (the admin API lists them in its
    /// answer: nothing is dropped in silence). Inside a container every key must be known (400
    /// `unknown-key` otherwise); a whole Info.plist's other top-level keys (CFBundle…) are not ours and
    /// are passed over, except ones that look like attribution settings, which are reported.
    public static func decodeReporting(_ bytes: Data, contentType: String?) throws -> (
        app: IngestRequests.AdvertisedApp, ignored: [String]
    ) {
        let isPropertyList = contentType.map { $0.contains("plist") || $0.contains("xml") } ?? false || Self.looksLikeXML(bytes)
        // XML is the documented form. Anything else would reach CoreFoundation's binary and OpenStep
        // parsers, and swift-corelibs-foundation segfaults bridging a binary plist that holds a set
        // (found by Fuzz/, fuzz-plist): refused before PropertyListSerialization sees it.
        if isPropertyList, !Self.looksLikeXML(bytes) {
            throw Problem(.invalidPropertyList, "the body is not an XML property list")
        }
        let root: Any
        do {
            root =
                isPropertyList
                ? try PropertyListSerialization.propertyList(from: bytes, options: [], format: nil)
                : try JSONSerialization.jsonObject(with: bytes)
        } catch {
            throw Problem(
                isPropertyList ? .invalidPropertyList : .invalidJSON,
                isPropertyList ? "the body is not an XML property list" : "the body is not valid JSON")
        }
        guard var dictionary = root as? [String: Any] else {
            throw Problem(.invalidJSON, "the configuration must be a dictionary")
        }
        let known = IngestRequests.AdvertisedApp.knownKeys
        func canonical(_ key: String) -> String { aliases[key] ?? key }
        var ignored: [String] = []
        var read: [String: Any] = [:]
        for container in containers {
            guard let nested = dictionary.removeValue(forKey: container) else { continue }
            guard let nested = nested as? [String: Any] else {
                throw Problem(.invalidJSON, "\(container) must be a dictionary")
            }
            if let unknown = nested.keys.filter({ !known.contains(canonical($0)) }).sorted().first {
                throw Problem(.unknownKey, "\(container).\(unknown) is not an AdAttributionKit configuration key")
            }
            for (key, value) in nested { read[canonical(key)] = value }
        }
        for (key, value) in dictionary {
            if known.contains(canonical(key)) {
                // A container's value wins over the same key at the top.
                if read[canonical(key)] == nil { read[canonical(key)] = value }
            } else if !isPropertyList {
                throw Problem(.unknownKey, "\(key) is not an AdAttributionKit configuration key")
            } else if key.localizedCaseInsensitiveContains("attribution") {
                ignored.append("\(key): not an AdAttributionKit configuration key this pipeline reads")
            }
        }
        try Self.spellMembersOnce(&read)
        // A property list can hold dates and data, which JSON cannot: a 400 that says so, not a 500.
        guard let json = try? JSONSerialization.data(withJSONObject: read) else {
            throw Problem(.invalidConfiguration, "values must be dictionaries, strings, numbers or booleans, not dates or data")
        }
        let app: IngestRequests.AdvertisedApp
        do {
            app = try JSONDecoder().decode(IngestRequests.AdvertisedApp.self, from: json)
        } catch let error as DecodingError {
            throw Problem(.invalidConfiguration, error.plainDescription)
        }
        // Inside the settings too (`AttributionWindows.global.install.clicks`): the top-level keys were
        // checked above, and a known one the type does not store is reported under `ignored` instead.
        if let unknown = UnknownMembers.paths(in: read, comparedWith: app).first(where: { $0.contains(".") }) {
            throw Problem(.unknownKey, "\(unknown) is not an AdAttributionKit configuration key")
        }
        return (app, ignored.sorted())
    }

    /// Renames the members `memberAliases` lists to the one name stored (and echoed); both spellings at
    /// once are one setting given twice, so they must agree.
    static func spellMembersOnce(_ read: inout [String: Any]) throws {
        for (setting, aliases) in memberAliases {
            guard var members = read[setting] as? [String: Any] else { continue }
            for (alias, name) in aliases {
                guard let value = members.removeValue(forKey: alias) else { continue }
                if let stored = members[name], Self.json(stored) != Self.json(value) {
                    throw Problem(
                        .invalidConfiguration,
                        "\(setting).\(alias) and \(setting).\(name) are one setting and disagree (\(value), \(stored))")
                }
                members[name] = value
            }
            read[setting] = members
        }
    }

    /// A plain value as JSON text, to compare one read from JSON with one read from a property list.
    private static func json(_ value: Any) -> Data? {
        try? JSONSerialization.data(withJSONObject: [value], options: [.sortedKeys])
    }

    public static func looksLikeXML(_ bytes: Data) -> Bool {
        let start = bytes.prefix(64).drop {
            $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 || $0 == 0xEF || $0 == 0xBB || $0 == 0xBF
        }
        return start.first == UInt8(ascii: "<")
    }
}
