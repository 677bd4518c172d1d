/// A configuration value outside its allowed range, named by the spec's key so the app team can fix it.
public struct ConfigurationProblem: Sendable, Hashable, CustomStringConvertible {
    public var key: String
    public var allowed: String
    public var description: String { "\(key) must be \(allowed)" }
}

extension AdvertisedAppConfiguration {
    /// Every out-of-range value, with its key path and allowed range (empty when valid).
    public func validationProblems() -> [ConfigurationProblem] {
        var problems: [ConfigurationProblem] = []
        func check(_ install: AttributionWindowsConfiguration.Install, at path: String) {
            if let click = install.click, !AttributionWindowsConfiguration.clickDaysRange.contains(click) {
                problems.append(.init(key: "\(path).install.click", allowed: "1–30 days"))
            }
            if let view = install.view, !AttributionWindowsConfiguration.viewDaysRange.contains(view) {
                problems.append(.init(key: "\(path).install.view", allowed: "1–7 days"))
            }
        }
        if let windows = attributionWindows {
            if let global = windows.global { check(global, at: "AttributionWindows.global") }
            for (network, install) in windows.networks.sorted(by: { $0.key < $1.key }) {
                check(install, at: "AttributionWindows.\(network)")
            }
        }
        if let cooldown = attributionCooldown {
            if let hours = cooldown.installCooldownHours, !AttributionCooldown.hoursRange.contains(hours) {
                problems.append(.init(key: "AttributionCooldown.install-cooldown-hours", allowed: "0–720 hours"))
            }
            if let hours = cooldown.reengagementCooldownHours, !AttributionCooldown.hoursRange.contains(hours) {
                problems.append(.init(key: "AttributionCooldown.re-engagement-cooldown-hours", allowed: "0–720 hours"))
            }
        }
        return problems
    }

    /// Keys the upload may carry that are accepted but not honoured, each with why; the admin API lists
    /// them in its answer and stores the configuration without them (`withoutIgnoredKeys`). Today one:
    /// `ignoreInteractionType` in `global`, which AdAttributionKit honours per network only (spec §3).
    public func ignoredKeys() -> [String] {
        guard attributionWindows?.global?.ignoreInteractionType != nil else { return [] }
        return ["AttributionWindows.global.install.ignoreInteractionType: not honoured in global; set it per ad network"]
    }

    /// This configuration without the keys `ignoredKeys` names.
    public func withoutIgnoredKeys() -> AdvertisedAppConfiguration {
        var configuration = self
        configuration.attributionWindows?.global?.ignoreInteractionType = nil
        return configuration
    }
}
