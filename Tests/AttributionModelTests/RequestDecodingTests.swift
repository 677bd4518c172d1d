import AttributionModel
import Foundation
import Testing

/// A body that does not decode as its route's request is refused `invalid-json` with words a client can
/// act on: the member, and what it must be, never Swift's type names. A conversion tag is read under
/// either spelling.
@Suite("Request decoding refusals and aliases")
struct RequestDecodingTests {
    static let update = #""device-identifier":"d","advertised-item-identifier":1,"time":1760000000000"#
    static let activity = update + #","sessions":1"#

    struct Case: CustomTestStringConvertible, Sendable {
        var body: String
        var detail: String
        var activity = false
        var testDescription: String { detail }
    }

    /// The detail `body` is refused with, decoded as an update (or an activity report).
    static func detail(_ body: String, activity: Bool) -> String? {
        let data = Data(body.utf8)
        do {
            if activity {
                _ = try PlainJSON.decode(IngestRequests.ActivityReportRequest.self, from: data)
            } else {
                _ = try PlainJSON.decode(IngestRequests.ValueUpdate.self, from: data)
            }
            return nil
        } catch let error as DecodingError {
            let problem = RequestProblem(decoding: error, body: data)
            return problem.reason == .invalidJSON ? problem.detail : "reason \(problem.reason)"
        } catch {
            return "not a DecodingError: \(error)"
        }
    }

    static let fits = "a number does not fit its member (times, identifiers and counts are whole numbers within their range)"

    @Test(arguments: [
        Case(
            body: #"{"advertised-item-identifier":1,"time":1,"fineConversionValue":1}"#,
            detail: "missing member device-identifier"),
        Case(body: "{\(update)}", detail: "missing member fineConversionValue"),
        Case(body: #"{\#(update),"fineConversionValue":"x"}"#, detail: "fineConversionValue must be an integer"),
        Case(body: #"{\#(update),"fineConversionValue":1,"lockPostback":"yes"}"#, detail: "lockPostback must be true or false"),
        Case(
            body: #"{\#(update),"fineConversionValue":1,"conversionTypes":"install"}"#, detail: "conversionTypes must be an array"
        ),
        Case(body: #"{\#(update),"fineConversionValue":null}"#, detail: "fineConversionValue must not be null: it is an integer"),
        Case(
            body: #"{\#(update),"fineConversionValue":1,"coarseConversionValue":"huge"}"#,
            detail: #"coarseConversionValue has an invalid value: "huge" is not one of its values"#),
        Case(body: #"{\#(update),"fineConversionValue":1.5}"#, detail: fits + ": fineConversionValue"),
        Case(
            body: #"{"device-identifier":"d","advertised-item-identifier":-1,"time":1e30,"fineConversionValue":1}"#,
            detail: fits + ": advertised-item-identifier, time"),
        Case(body: #"{\#(update),"lockWindow":true}"#, detail: "missing member fineValue"),
        Case(body: #"{\#(update),"fineValue":1,"lockWindow":1}"#, detail: "lockWindow must be true or false"),
        Case(
            body: #"{\#(update),"fineValue":1,"lockPostback":true}"#,
            detail:
                "lockPostback has an invalid value: it is AdAttributionKit's spelling, and fineValue SKAdNetwork's; "
                + "an update uses one of the two shapes"),
        Case(
            body: #"{\#(update),"fineConversionValue":1,"coarseValue":"low"}"#,
            detail:
                "fineConversionValue has an invalid value: it is AdAttributionKit's spelling, and coarseValue SKAdNetwork's; "
                + "an update uses one of the two shapes"),
        Case(body: #"{\#(update),"fineConversionValue":1"#, detail: "the body is not valid JSON"),
        Case(body: #"{\#(update),"fineConversionValue":1} x"#, detail: "the body is not valid JSON"),
        Case(body: "", detail: "the body is not valid JSON"),
        Case(body: "[1]", detail: "the body must be an object"),
        Case(body: #"{\#(activity),"events":5}"#, detail: "events must be an object", activity: true),
        Case(body: #"{\#(activity),"events":{"a":"b"}}"#, detail: "events.a must be an integer", activity: true),
        // Revenue may have fractions: only the time is named.
        Case(
            body: #"{"device-identifier":"d","advertised-item-identifier":1,"time":1.5,"revenue":{"USD":0.25}}"#,
            detail: fits + ": time", activity: true),
    ])
    func aRefusalNamesTheMemberInJSONWords(_ test: Case) {
        #expect(Self.detail(test.body, activity: test.activity) == test.detail)
    }

    /// SKAdNetwork's `updatePostbackConversionValue(_:coarseValue:lockWindow:)` arguments are the same
    /// update, marked as SKAdNetwork's all the way to attribution-winner, and written back in that shape.
    @Test func skadnetworkShapedUpdatesDecode() throws {
        let skan = try PlainJSON.decode(
            IngestRequests.ValueUpdate.self,
            from: Data(#"{\#(Self.update),"fineValue":42,"coarseValue":"high","lockWindow":true}"#.utf8))
        #expect(skan.shape == .skadnetwork)
        #expect(skan.update == PostbackUpdate(fineConversionValue: 42, coarseConversionValue: .high, lockPostback: true))
        #expect(try skan.report(receivedAt: 1).skadnetworkShape == true)
        let bare = try PlainJSON.decode(IngestRequests.ValueUpdate.self, from: Data(#"{\#(Self.update),"fineValue":7}"#.utf8))
        #expect(bare.shape == .skadnetwork && bare.update == PostbackUpdate(fineConversionValue: 7))
        let aak = try PlainJSON.decode(
            IngestRequests.ValueUpdate.self, from: Data(#"{\#(Self.update),"fineConversionValue":42}"#.utf8))
        #expect(aak.shape == .adAttributionKit)
        #expect(try aak.report(receivedAt: 1).skadnetworkShape == nil)

        let written = try JSONSerialization.jsonObject(with: JSONEncoder().encode(skan)) as? [String: Any]
        #expect(
            Set(written?.keys ?? [:].keys) == [
                "device-identifier", "advertised-item-identifier", "time", "fineValue", "coarseValue", "lockWindow",
            ])
        let reread = try PlainJSON.decode(IngestRequests.ValueUpdate.self, from: JSONEncoder().encode(skan))
        #expect(reread.shape == .skadnetwork && reread.update == skan.update)

        var high = skan
        high.update.fineConversionValue = 64
        #expect(throws: RequestProblem(.valueOutOfRange, "fineValue must be within 0–63")) { try high.validate() }
    }

    @Test func aConversionTagIsReadUnderEitherSpelling() throws {
        func activityTag(_ members: String) throws -> String? {
            try PlainJSON.decode(IngestRequests.ActivityReportRequest.self, from: Data("{\(Self.activity)\(members)}".utf8))
                .conversionTag
        }
        func updateTag(_ members: String) throws -> String? {
            try PlainJSON.decode(
                IngestRequests.ValueUpdate.self, from: Data(#"{\#(Self.update),"fineConversionValue":1\#(members)}"#.utf8)
            ).update.conversionTag
        }
        for read in [activityTag, updateTag] {
            #expect(try read("") == nil)
            #expect(try read(#","conversionTag":"T""#) == "T")
            #expect(try read(#","conversion-tag":"T""#) == "T")
            #expect(try read(#","conversionTag":"T","conversion-tag":"T""#) == "T")
            #expect(throws: DecodingError.self) { try read(#","conversionTag":"T","conversion-tag":"U""#) }
        }
        // The activity report carries it on to the pipeline.
        let tag = "6f1c2a4e-8b3d-4f5a-9c7e-1d2b3a4c5e6f"
        let request = try PlainJSON.decode(
            IngestRequests.ActivityReportRequest.self, from: Data(#"{\#(Self.activity),"conversionTag":"\#(tag)"}"#.utf8))
        #expect(try request.report(receivedAt: 1_760_000_000_000).conversionTag == tag)
    }
}
