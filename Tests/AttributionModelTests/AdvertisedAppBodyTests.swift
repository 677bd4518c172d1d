import AttributionModel
import Foundation
import Testing

@Suite("Advertised-app bodies")
struct AdvertisedAppBodyTests {
    static func infoPlist(_ inner: String) -> Data {
        Data(
            (#"<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict><key>CFBundleName</key><string>App</string>"#
                + #"<key>AdAttributionKitConfigurations</key><dict>\#(inner)</dict></dict></plist>"#).utf8)
    }

    /// The problem `decode` refuses `bytes` with; nil (and a recorded issue) when it decodes or throws something else.
    static func problem(_ bytes: Data, contentType: String?) -> AdvertisedAppBody.Problem? {
        do {
            let app = try AdvertisedAppBody.decode(bytes, contentType: contentType)
            Issue.record("expected a refusal, decoded \(app)")
        } catch let problem as AdvertisedAppBody.Problem {
            return problem
        } catch {
            Issue.record("expected an AdvertisedAppBody.Problem, got \(error)")
        }
        return nil
    }

    @Test func infoPlistReadsOnlyTheAdAttributionKitKeys() throws {
        let body = Self.infoPlist(
            "<key>AttributionCooldown</key><dict><key>install-cooldown-hours</key><integer>24</integer></dict>")
        let app = try AdvertisedAppBody.decode(body, contentType: "application/x-plist")
        #expect(app.attributionCooldown?.installCooldownHours == 24)
        // Without a content type the leading `<` picks the property-list reader.
        #expect(try AdvertisedAppBody.decode(body, contentType: nil).attributionCooldown?.installCooldownHours == 24)
    }

    static func plist(_ inner: String) -> Data {
        Data(
            (#"<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict><key>CFBundleName</key><string>App</string>"#
                + inner + "</dict></plist>").utf8)
    }

    /// Apple's examples put the keys in an `AdAttributionKit` dictionary and call the re-engagement
    /// opt-in `OptInForReengagementPostbackCopies`: read, in a plist and in JSON.
    @Test func applesLayoutAndKeyNamesAreRead() throws {
        let body = Self.plist(
            "<key>AdAttributionKit</key><dict><key>AttributionCopyEndpoint</key><string>https://example.com</string>"
                + "<key>OptInForReengagementPostbackCopies</key><true/></dict>")
        let decoded = try AdvertisedAppBody.decodeReporting(body, contentType: "application/x-plist")
        #expect(decoded.app.attributionCopyEndpoint == "https://example.com")
        #expect(decoded.app.eligibleForReengagementPostbackCopies == true)
        #expect(decoded.ignored.isEmpty, "CFBundleName is not ours and not reported: \(decoded.ignored)")
        let json = Data(
            #"{"AdAttributionKit":{"AttributionCopyEndpoint":"https://example.com","OptInForReengagementPostbackCopies":true}}"#
                .utf8)
        let fromJSON = try AdvertisedAppBody.decode(json, contentType: "application/json")
        #expect(
            fromJSON.attributionCopyEndpoint == "https://example.com" && fromJSON.eligibleForReengagementPostbackCopies == true)
    }

    /// WWDC25's slides spell the re-engagement cooldown `reengagement-cooldown-hours`, Apple's
    /// configuration page `re-engagement-cooldown-hours`: either is read, in JSON and in an Info.plist,
    /// stored (and echoed) under the second; both at once must agree.
    @Test(arguments: [
        #"{"AttributionCooldown":{"reengagement-cooldown-hours":48}}"#,
        #"{"AdAttributionKit":{"AttributionCooldown":{"reengagement-cooldown-hours":48}}}"#,
        #"{"AttributionCooldown":{"re-engagement-cooldown-hours":48}}"#,
        #"{"AttributionCooldown":{"reengagement-cooldown-hours":48,"re-engagement-cooldown-hours":48}}"#,
    ])
    func bothCooldownSpellingsAreOneSetting(_ body: String) throws {
        let app = try AdvertisedAppBody.decode(Data(body.utf8), contentType: "application/json")
        #expect(app.attributionCooldown?.reengagementCooldownHours == 48)
        let stored = String(decoding: try JSONEncoder().encode(app), as: UTF8.self)
        #expect(stored.contains(#""re-engagement-cooldown-hours":48"#) && !stored.contains("reengagement-cooldown"), "\(stored)")
    }

    @Test func applesCooldownSpellingInAnInfoPlist() throws {
        let body = Self.infoPlist(
            "<key>AttributionCooldown</key><dict><key>reengagement-cooldown-hours</key><integer>12</integer></dict>")
        #expect(try AdvertisedAppBody.decode(body, contentType: nil).attributionCooldown?.reengagementCooldownHours == 12)
        let disagreeing = Self.infoPlist(
            "<key>AttributionCooldown</key><dict><key>reengagement-cooldown-hours</key><integer>12</integer>"
                + "<key>re-engagement-cooldown-hours</key><integer>13</integer></dict>")
        let problem = Self.problem(disagreeing, contentType: nil)
        #expect(problem?.reason.rawValue == "invalid-configuration" && problem?.detail.contains("disagree") == true)
    }

    /// Never a 200 that drops a key in silence: an unknown key inside an AdAttributionKit dictionary is
    /// refused by name, and an unread top-level key that looks like an attribution setting is reported.
    @Test func unknownKeysAreRefusedOrReported() throws {
        let inside = Self.plist("<key>AdAttributionKit</key><dict><key>AttributionCopyEndpiont</key><string>x</string></dict>")
        let problem = Self.problem(inside, contentType: "application/x-plist")
        #expect(problem?.reason.rawValue == "unknown-key" && problem?.detail.contains("AttributionCopyEndpiont") == true)
        let top = Self.plist("<key>NSAdvertisingAttributionReportEndpoint</key><string>https://example.com</string>")
        let decoded = try AdvertisedAppBody.decodeReporting(top, contentType: "application/x-plist")
        #expect(decoded.ignored.count == 1 && decoded.ignored[0].hasPrefix("NSAdvertisingAttributionReportEndpoint"))
    }

    /// A misspelt key inside a setting is refused by its path too: stored, it would leave the default in
    /// force without a word. A complete, correct configuration passes.
    @Test(arguments: [
        (#"{"AttributionWindows":{"global":{"install":{"clicks":10}}}}"#, "AttributionWindows.global.install.clicks"),
        (
            #"{"AttributionWindows":{"example.adattributionkit":{"install":{"click":3,"veiw":1}}}}"#,
            "AttributionWindows.example.adattributionkit.install.veiw"
        ),
        (#"{"AdAttributionKit":{"AttributionCooldown":{"bogus":1}}}"#, "AttributionCooldown.bogus"),
    ])
    func aMisspeltNestedKeyIsRefusedByItsPath(_ body: String, path: String) throws {
        let problem = Self.problem(Data(body.utf8), contentType: "application/json")
        #expect(problem?.reason.rawValue == "unknown-key")
        #expect(problem?.detail.hasPrefix(path + " ") == true, "\(problem?.detail ?? "")")
        let complete = #"""
            {"AttributionWindows":{"global":{"install":{"click":10,"view":2}},
              "example.adattributionkit":{"install":{"click":3,"ignoreInteractionType":"view"}}},
             "AttributionCooldown":{"install-cooldown-hours":24,"re-engagement-cooldown-hours":48},
             "AttributionCopyEndpoint":"https://example.com","EligibleForAdAttributionKitOverlappingConversions":true}
            """#
        #expect(throws: Never.self) { try AdvertisedAppBody.decode(Data(complete.utf8), contentType: "application/json") }
    }

    /// The same for a conversion-value schema: a misspelt condition would make its rule hold always.
    @Test func aSchemaMemberTheSchemaDoesNotReadIsNamed() throws {
        let body = Data(
            #"""
            {"windows":[{"window":0,"allow-decrease":false,"rules":[
              {"when":{"sessions":1,"events":{"purchase":1},"revenue":{"USD":0.5}},"fine":40,"coarse":"high","lock":true},
              {"when":{"sesions":1},"fine":5,"coarse":"low","extra":null}]}]}
            """#.utf8)
        let schema = try JSONDecoder().decode(ConversionValueSchema.self, from: body)
        #expect(UnknownMembers.paths(inJSON: body, comparedWith: schema) == ["windows.0.rules.1.when.sesions"])
    }

    @Test func jsonNamesTheUnknownKey() {
        let problem = Self.problem(Data(#"{"AttributionCooldown":{},"CFBundleName":"App"}"#.utf8), contentType: nil)
        #expect(problem?.reason.rawValue == "unknown-key")
    }

    /// fuzz-plist's first finding, as it found it (585 bytes) and cut down by hand (a dictionary holding a
    /// set of one string): swift-corelibs-foundation's PropertyListSerialization segfaults bridging a
    /// binary plist's set, which took ingest down. Only XML property lists are read now.
    static let binaryPlistsWithASet = [
        "YnBsaXN0MDDTAQIDBCAhXxAeQWRBdHRyaWJ1dGlvbkVsaWdpY29vbGRvYmxlRm9yQWRBbm9sZG9ibGVGb3JBZGlmaWVyXENGQnVu"
            + "ZGxlTmFtZdUFBgcICQoPEB4fXxATQXR0cmlii4uWjW5Db29sZG93bl8QF0F0dHJpYnV0aW9uQ29weUVuZHBvaW50XxASQXR0cmli"
            + "dXRpb25XaW5kb3dzXxAxRWxpZ2libGVGb3JBZEF0dHJpYnV0aW9uS2l0T3ZlcmxhcHBpbmdDb252ZXJzaW9uc18QNUVsaWdpYmxl"
            + "Rm9yQWRBdHRyaWJ1dGlvbktpdFJlZW5nYWdlbWVudFBvc3RiYWNrQ29waWVzwgsMDQ5fEBZpbnN0YWxsLWNvb2xkb3duLWhvdXJz"
            + "XxAccmUtZW5nYWdlbWVudC1jb29sZG93bi1ob3VycxAYEDBfEBNodHRwczovL2V4YW1wbGUuY29t0hESExpfEBhleGFtcGxlLmFk"
            + "YXR0cmlidXRpb25raXRWZ2xvYmFs0RQVV2luc3RhbGzSFhcYGVVjbGlja18QFWlnbm9yZUludGVyYWN0aW9uVHlwZRAeVHZpZXfR"
            + "FBvSFhkSHRAHEAEICV8QD2NvbS5leGFtcGxlLmFwcFNBcHAACAAPADAARQBSAF0AcwCNAKIA1gEOARMBLAFLAU0BTwFlAWoBhQGM"
            + "AY8BlwGcAaIBugG8AcEBxAHJAcsBzQHOAc8B4QAAAAAAAAIBAAAAAAAAACIAAAAAAAAAAAAAAAAAAAHl",
        "YnBsaXN0MDDRAQJRa8EDUWEICw0PAAAAAAAAAQEAAAAAAAAABAAAAAAAAAAAAAAAAAAAABE=",
    ]

    @Test(arguments: binaryPlistsWithASet)
    func binaryPropertyListIsRefusedNotParsed(_ base64: String) throws {
        let body = try #require(Data(base64Encoded: base64))
        #expect(Self.problem(body, contentType: "application/x-plist")?.reason.rawValue == "invalid-property-list")
        // Without a plist content type it is not JSON either.
        #expect(Self.problem(body, contentType: nil)?.reason.rawValue == "invalid-json")
    }

    /// JSON has no dates or data: these used to escape as an NSError, which ingest answered with a 500.
    @Test(arguments: ["<date>2024-01-01T00:00:00Z</date>", "<data>AAAA</data>", "<real>1e300</real>"])
    func propertyListValueOfTheWrongTypeIsAnInvalidConfiguration(_ value: String) {
        let body = Self.infoPlist("<key>AttributionCooldown</key><dict><key>install-cooldown-hours</key>\(value)</dict>")
        #expect(Self.problem(body, contentType: "application/x-plist")?.reason.rawValue == "invalid-configuration")
    }
}
