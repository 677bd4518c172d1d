import AttributionModel
import Foundation
import Testing

/// The dispatcher's postback payload and body, written without JSONEncoder: the same bytes as
/// `JSONCoding.encoder`, every optional field both ways, and nil (JSONEncoder's turn) for text it
/// would escape.
@Suite("Postback payload and body as plain JSON")
struct PostbackPlainJSONTests {
    typealias F = Fixture

    static var orders: [PostbackOrder] {
        var orders: [PostbackOrder] = []
        for (index, optional) in [false, true].enumerated() {
            for kind in [ConversionType.download, .redownload, .reengagement] {
                let payload = PostbackPayload(
                    impressionType: optional ? "web-impression" : ImpressionPayload.appImpression,
                    adNetworkIdentifier: F.network("a\(index).adattributionkit"), sourceIdentifier: optional ? "5239" : "39",
                    advertisedItemIdentifier: 1_108_187_390, publisherItemIdentifier: optional ? 5_838_492 : nil,
                    conversionType: kind, marketplaceIdentifier: optional ? "com.example.store/x" : nil,
                    postbackIdentifier: "8B2E0D8C-4A1E-4C7B-9C56-0D3B3F9A1E\(index)\(kind.rawValue.count)",
                    postbackSequenceIndex: index * 2, didWin: optional)
                orders.append(
                    PostbackOrder(
                        payload: payload, adInteractionType: optional ? .view : .click, conversionValue: optional ? 63 : nil,
                        coarseConversionValue: optional ? .medium : nil, countryCode: optional ? "FR" : nil,
                        isDevelopment: false))
            }
        }
        return orders
    }

    @Test(arguments: orders) func sameBytesAsJSONEncoder(order: PostbackOrder) throws {
        #expect(order.payload.plainJSON() == Array(try JSONCoding.encoder.encode(order.payload)))
        let body = PostbackBody(order: order, jwsString: "eyJhbGciOiJFUzI1NiJ9.eyJhIjoxfQ.c2ln-_")
        #expect(body.plainJSON() == Array(try JSONCoding.encoder.encode(body)))
    }

    @Test func textThatNeedsEscapingIsLeftToJSONEncoder() throws {
        var order = try #require(Self.orders.first)
        for text in ["quote\"", "back\\slash", "tab\t", "é"] {
            order.payload.marketplaceIdentifier = text
            #expect(order.payload.plainJSON() == nil, "\(text)")
            order.countryCode = text
            #expect(PostbackBody(order: order, jwsString: "a.b.c").plainJSON() == nil, "\(text)")
        }
    }
}
