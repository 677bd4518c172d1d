import AttributionModel
import Testing

/// Keys an upload may carry that are accepted but not honoured: listed, dropped from
/// what is stored, and never a reason to refuse the upload.
@Suite struct IgnoredConfigurationKeysTests {
    static let network = AdNetworkIdentifier("a.adattributionkit")!

    @Test(arguments: [
        // ignoreInteractionType in global: ignored, whatever else global says.
        (AttributionWindowsConfiguration(global: .init(ignoreInteractionType: .view)), 1),
        (AttributionWindowsConfiguration(global: .init(click: 3, ignoreInteractionType: .click)), 1),
        // Per network it is honoured: nothing ignored.
        (AttributionWindowsConfiguration(networks: [network: .init(ignoreInteractionType: .view)]), 0),
        (AttributionWindowsConfiguration(global: .init(view: 2)), 0),
    ])
    func globalIgnoreInteractionTypeIsAcceptedButNotHonoured(windows: AttributionWindowsConfiguration, ignored: Int) {
        let configuration = AdvertisedAppConfiguration(itemIdentifier: 1, attributionWindows: windows)
        #expect(configuration.validationProblems().isEmpty, "never refused for it")
        #expect(configuration.ignoredKeys().count == ignored)
        #expect(
            configuration.ignoredKeys().allSatisfy { $0.hasPrefix("AttributionWindows.global.install.ignoreInteractionType") })
        let stored = configuration.withoutIgnoredKeys()
        #expect(stored.attributionWindows?.global?.ignoreInteractionType == nil)
        #expect(stored.attributionWindows?.global?.click == windows.global?.click, "the rest of global is kept")
        #expect(stored.attributionWindows?.networks == windows.networks, "per-network values are kept")
        #expect(stored.ignoredKeys().isEmpty)
    }
}
