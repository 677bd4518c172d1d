import AttributionModel
import Foundation
import Testing

/// Batch bodies are cut into items by structure alone, so each item is answered on its own.
@Suite("Batch bodies")
struct BatchBodyTests {
    static func items(_ text: String, _ format: BatchBody.Format = .jsonArray) throws(RequestProblem) -> [String] {
        let data = Data(text.utf8)
        return try BatchBody.items(in: data, format: format).map { String(decoding: data[$0], as: UTF8.self) }
    }

    @Test(arguments: [
        (#"[{"a":1}]"#, [#"{"a":1}"#]),
        (#" [ {"a":1} , {"b":[1,2,{"c":"]"}]} ] "#, [#"{"a":1}"#, #"{"b":[1,2,{"c":"]"}]}"#]),
        (#"[{"s":"quote \" and \\ and , and }"},{}]"#, [#"{"s":"quote \" and \\ and , and }"}"#, "{}"]),
        // Items that are not objects are cut out too: they are refused one by one, not as a body.
        (#"[1, "two", null, {"x":{}}]"#, ["1", #""two""#, "null", #"{"x":{}}"#]),
        (#"[{"broken":tru}]"#, [#"{"broken":tru}"#]),
    ])
    func jsonArraysAreCutIntoTheirElements(body: String, expected: [String]) throws {
        #expect(try Self.items(body) == expected)
    }

    @Test(arguments: [
        ("{\"a\":1}\n{\"b\":2}\n", ["{\"a\":1}", "{\"b\":2}"]),
        ("{\"a\":1}\r\n\r\n  {\"b\":2}", ["{\"a\":1}", "{\"b\":2}"]),
        ("not json\n{}", ["not json", "{}"]),
    ])
    func ndjsonIsCutIntoItsNonBlankLines(body: String, expected: [String]) throws {
        #expect(try Self.items(body, .ndjson) == expected)
    }

    @Test(arguments: [
        ("", ProblemReason.invalidBatch), ("[]", .invalidBatch), ("{}", .invalidBatch), (#"[{"a":1}"#, .invalidBatch),
        (#"[{"a":1} {"b":2}]"#, .invalidBatch), (#"[{"a":"open]"#, .invalidBatch), (#"[{}] trailing"#, .invalidBatch),
        ("[{},]", .invalidBatch),
    ])
    func malformedBodiesAreRefusedWhole(body: String, reason: ProblemReason) {
        #expect(throws: RequestProblem.self) { try Self.items(body) }
        do { _ = try Self.items(body) } catch { #expect(error.reason == reason) }
    }

    @Test func moreThanAThousandItemsAreTooMany() throws {
        let thousand = "[" + Array(repeating: "{}", count: 1_000).joined(separator: ",") + "]"
        #expect(try Self.items(thousand).count == 1_000)
        for body in [
            "[" + Array(repeating: "{}", count: 1_001).joined(separator: ",") + "]",
            Array(repeating: "{}", count: 1_001).joined(separator: "\n"),
        ] {
            do {
                _ = try Self.items(body, body.hasPrefix("[") ? .jsonArray : .ndjson)
                Issue.record("accepted 1,001 items")
            } catch { #expect(error.reason == .batchTooLarge) }
        }
        #expect(throws: RequestProblem.self) { try Self.items("\n \n", .ndjson) }
    }

    @Test(arguments: [
        ("application/x-ndjson" as String?, BatchBody.Format.ndjson), ("application/x-ndjson; charset=utf-8", .ndjson),
        ("Application/NDJSON", .ndjson), ("application/json", .jsonArray), (nil, .jsonArray),
    ])
    func theContentTypeChoosesTheFormat(contentType: String?, format: BatchBody.Format) {
        #expect(BatchBody.Format(contentType: contentType) == format)
    }

    @Test func anItemCarriesItsOwnIdempotencyKey() throws {
        struct Event: Decodable { var time: Int }
        let item = try JSONDecoder().decode(BatchItem<Event>.self, from: Data(#"{"time":5,"idempotency-key":"k-1"}"#.utf8))
        #expect(item.event.time == 5)
        #expect(item.idempotencyKey == "k-1")
        #expect(try JSONDecoder().decode(BatchItem<Event>.self, from: Data(#"{"time":5}"#.utf8)).idempotencyKey == nil)
    }
}

/// The per-caller rate rule.
@Suite("Token bucket")
struct TokenBucketTests {
    /// (rate/s, burst, takes as (at ms, count), granted per take)
    @Test(arguments: [
        (10.0, 5.0, [(0, 5), (0, 1)], [5, 0]),
        (10.0, 5.0, [(0, 5), (100, 2)], [5, 1]),
        (10.0, 5.0, [(0, 3), (10_000, 10)], [3, 5]),
        (1_000.0, 1_000.0, [(0, 600), (0, 600), (500, 600)], [600, 400, 500]),
        (0.5, 1.0, [(0, 1), (1_000, 1), (2_000, 1)], [1, 0, 1]),
    ])
    func grantsAtMostTheBurstAndRefillsAtTheRate(rate: Double, burst: Double, takes: [(Int, Int)], granted: [Int]) {
        var bucket = TokenBucket(rate: rate, burst: burst, now: 0)
        #expect(takes.map { bucket.take($0.1, now: Milliseconds($0.0)) } == granted)
    }

    @Test func retryAfterSaysWhenTheNextTokenIsThere() {
        var bucket = TokenBucket(rate: 4, burst: 2, now: 1_000)
        #expect(bucket.retryAfter(now: 1_000) == 0)
        #expect(bucket.take(2, now: 1_000) == 2)
        #expect(bucket.retryAfter(now: 1_000) == 250)
        #expect(bucket.retryAfter(now: 1_100) == 150)
        #expect(!bucket.isFull(now: 1_400))
        #expect(bucket.isFull(now: 1_500))
        // A clock going backwards takes nothing away.
        #expect(bucket.take(1, now: 900) == 0)
    }
}
