import AttributionModel
import Foundation
import Testing

/// `PlainJSON` must decode exactly what JSONDecoder decodes, and refuse exactly what it refuses: each
/// case is decoded both ways, and the table also says which cases take the fast path (so a reader
/// that silently sent everything to JSONDecoder would fail here too).
@Suite("Plain JSON without JSONDecoder")
struct PlainJSONTests {
    struct Payload: Codable, Equatable {
        var name: String
        var count: Int
        var item: UInt64
        var flag: Bool?
        var ratio: Double?
        var inner: Inner?
        var list: [Int?]?
    }

    struct Inner: Codable, Equatable {
        var type: String
        var time: Int64
    }

    /// (JSON, takes the fast path)
    static let cases: [(String, Bool)] = [
        (#"{"name":"a","count":1,"item":2}"#, true),
        (#" { "name" : "a/b c" , "count" : -12 , "item" : 0 , "flag" : true }  "#, true),
        ("{\n\t\"name\":\"\",\r\n\"count\":0,\"item\":18446744073709551615,\"flag\":null}", true),
        (#"{"name":"x","count":-9223372036854775808,"item":1,"flag":false,"unknown":"ignored"}"#, true),
        (#"{"name":"x","count":1,"item":1,"ratio":3}"#, true),
        // Decodes through the fast path's form but the type refuses it: JSONDecoder's refusal stands.
        (#"{"name":"x","count":"1","item":1}"#, true),
        (#"{"name":"x","count":1,"item":-1}"#, true),
        (#"{"name":"x","count":9223372036854775808,"item":1}"#, true),
        (#"{"count":1,"item":1}"#, true),
        (#"{}"#, true),
        // Left to JSONDecoder.
        (#"{"name":"x","count":1,"item":1,"ratio":0.5}"#, false),
        (#"{"name":"x","count":1e3,"item":1}"#, false),
        (#"{"name":"x","count":-0,"item":1}"#, false),
        (#"{"name":"x","count":01,"item":1}"#, false),
        (#"{"name":"x\"y","count":1,"item":1}"#, false),
        (#"{"name":"\u0041","count":1,"item":1}"#, false),
        (#"{"name":"é","count":1,"item":1}"#, false),
        (#"{"name":"x","count":1,"item":1,"name":"y"}"#, false),
        (#"{"name":"x","count":1,"item":18446744073709551616}"#, false),
        (#"{"name":"x","count":1,"item":1,"nested":{"a":[1,{"b":null}]}}"#, true),
        (#"{"name":"x","count":1,"item":1,"list":[]}"#, true),
        (#"{"name":"x","count":1,"item":1,"list":[1, null ,-3],"inner":{"type":"click","time":5}}"#, true),
        (#"{"name":"x","count":1,"item":1,"inner":{"type":"click"}}"#, true),
        (#"{"name":"x","count":1,"item":1,"inner":{"type":"click","time":5,"type":"view"}}"#, false),
        (#"{"name":"x","count":1,"item":1,"list":[1,]}"#, false),
        (#"{"name":"x","count":1,"item":1,"list":[1 2]}"#, false),
        (
            #"{"name":"x","count":1,"item":1,"deep":"# + String(repeating: "[", count: 17) + String(repeating: "]", count: 17)
                + "}", false
        ),
        (
            #"{"name":"x","count":1,"item":1,"deep":"# + String(repeating: "[", count: 15) + String(repeating: "]", count: 15)
                + "}", true
        ),
        (#"{"name":"x","count":1,"item":1,}"#, false),
        (#"{"name":"x","count":1,"item":1}x"#, false),
        (#"{"name":"x","count":1,"item":1"#, false),
        (#"{"name":"x" "count":1,"item":1}"#, false),
        (#"{"name":"x","count":tru,"item":1}"#, false),
        (#"["name"]"#, true),
        (#""name""#, true),
        ("", false),
        ("{\"name\":\"a\tb\",\"count\":1,\"item\":1}", false),
    ]

    @Test(arguments: cases) func decodesAsJSONDecoderDoes(json: String, fast: Bool) throws {
        let data = Data(json.utf8)
        #expect((PlainJSON.compactForm(of: data) != nil) == fast, "fast path for \(json)")
        let expected = Result { try JSONDecoder().decode(Payload.self, from: data) }
        let decoded = Result { try PlainJSON.decode(Payload.self, from: data) }
        switch (expected, decoded) {
        case (.success(let want), .success(let got)): #expect(want == got, "\(json)")
        case (.failure, .failure): break
        default: Issue.record("\(json): JSONDecoder \(expected), PlainJSON \(decoded)")
        }
    }

    /// What the verifier reads: a JWS header and an impression payload as ad networks sign them.
    @Test func readsTheSignedImpressionsPartsOnTheFastPath() throws {
        let header = Data(#"{"alg":"ES256","kid":"example.adattributionkit"}"#.utf8)
        #expect(PlainJSON.compactForm(of: header) != nil)
        #expect(
            try PlainJSON.decode(JWSHeaderShape.self, from: header)
                == JWSHeaderShape(alg: "ES256", kid: "example.adattributionkit"))
        let payload = Data(
            #"{"ad-network-identifier":"example.adattributionkit","advertised-item-identifier":1108187390,"eligible-for-re-engagement":true,"impression-identifier":"E095CC8F-B36D-4C2E-B686-446E1D06C598","impression-type":"app-impression","publisher-item-identifier":5838492,"source-identifier":7901,"timestamp":1795570773289}"#
                .utf8)
        #expect(PlainJSON.compactForm(of: payload) != nil)
        #expect(
            try PlainJSON.decode(ImpressionPayload.self, from: payload)
                == JSONDecoder().decode(ImpressionPayload.self, from: payload))
    }

    struct JWSHeaderShape: Codable, Equatable {
        var alg: String
        var kid: String?
    }
}
