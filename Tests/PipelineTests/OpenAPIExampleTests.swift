import AttributionModel
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceRuntime
import TestSupport
import Testing

@testable import DispatcherService

extension PipelineSuites {
    /// The OpenAPI document's examples are real requests and answers. Each fits its schema; and sent to
    /// ingest, admin and the verifier on a real Redis (what must be fresh made fresh:
    /// `OpenAPIExampleFreshening`), every request example gets the answer the document pairs with it,
    /// and every operation without a body answers like its example.
    ///
    /// The pairing: a request example produces the response example of the same name in its operation.
    /// A response shared through `components/responses` is listed under several statuses; its
    /// example's own `status` says which. The answer has that response's status and media type and,
    /// for a JSON object, the same members at the top level (the values are the run's own).
    ///
    /// Every operation is driven. What no request here produces is held to its schema only: the shed
    /// and outage answers (429, 503: an overloaded ingest, a lagging replica or a lost Redis, as
    /// BatchAndOverloadTests, DurabilityTests and AccessTests make them) and the refusals no request
    /// example asks for.
    @Suite("OpenAPI examples")
    struct OpenAPIExampleTests {
        /// What the examples name: the ad network, the publisher and advertised apps, a device.
        static let network = "example.adattributionkit"
        static let publisher: ItemIdentifier = 5_838_492
        static let advertised: ItemIdentifier = 1_108_187_390
        static let device = "device-0001"

        /// Every operation, in the order a client calls them: registrations, then events (so the
        /// verifier has the keys and apps to check them against), what became of them, then
        /// revocations and deletions.
        static let order = [
            "getHealth", "headHealth", "getReadiness", "getOpenAPIDocument", "getSigningKeys", "getMetrics",
            "putAdNetwork", "getAdNetwork", "issueNetworkCredential", "listNetworkCredentials", "getOwnAdNetwork",
            "putPublisherApp", "getPublisherApp", "putAdvertisedApp", "getAdvertisedApp", "issueAppKey", "listAppKeys",
            "putConversionValueSchema", "getConversionValueSchema", "getConversionValueSchemaVersion",
            "reportImpression", "reportImpressions", "reportConversion", "reportConversions", "reportValueUpdate",
            "reportValueUpdates", "reportActivity", "reportActivities", "evaluateConversionValues",
            "listAdNetworkRejections", "listOwnAdNetworkRejections", "listAdvertisedAppRejections",
            "requestTestPostbacks", "requestTestPostbacksAsAdmin", "listDeadLetters", "replayDeadLetter",
            "replayDeadLetters", "eraseDevice", "eraseDevices", "revokeAppKey", "revokeNetworkCredential",
            "deletePublisherApp", "deleteAdvertisedApp", "deleteAdNetwork",
        ]

        /// Every request body and every response with a body shows examples (`examples`, each with a
        /// summary), and each example fits its schema.
        @Test func everyBodyHasExamplesThatFitItsSchema() throws {
            let document = try OpenAPIExampleDocument.read()
            for (operation, place, media, node) in document.mediaTypes() {
                let examples = node["examples"]?.object ?? [:]
                #expect(!examples.isEmpty, "\(operation) \(place) \(media) has examples")
                #expect(node["example"] == nil, "\(operation) \(place) \(media): `examples`, not the deprecated `example`")
                for (name, example) in examples {
                    #expect(example["summary"]?.string?.isEmpty == false, "\(operation) \(place) \(name) has a summary")
                }
            }
            let examples = document.examples()
            #expect(examples.count > 150, "\(examples.count) examples")
            for example in examples {
                let misfits = document.misfits(example.value, example.schema)
                #expect(misfits.isEmpty, "\(example.operation) \(example.place) \(example.media) \(example.name): \(misfits)")
            }
        }

        @Test func everyRequestExampleGetsTheAnswerOfItsName() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            let services = try PipelineProcesses(redis: redis, timeScale: 1, only: ["ingest", "verifier"], inProcess: true)
            defer { services.stop() }
            try #require(try await HTTPTestClient().waitUntilUp("\(services.ingestURL)/health"), "starts\n\(services.logs())")
            let document = try OpenAPIExampleDocument.read()
            let operations = Dictionary(uniqueKeysWithValues: document.operations.map { ($0.id, $0) })
            #expect(Set(Self.order) == Set(operations.keys), "\(Set(operations.keys).symmetricDifference(Self.order).sorted())")
            let run = OpenAPIExampleRun(services: services, document: document)
            let connection = redis.connect()
            for id in Self.order {
                let operation = try #require(operations[id])
                if id == "listAdNetworkRejections" {
                    // The lists are read once the verifier has verified or refused every example event.
                    let progress = VerifierProgress(connection: connection)
                    let events = run.events
                    let verified = try await eventually(timeout: .seconds(30)) { try await progress.holds(events) }
                    #expect(verified, "the verifier read \(events.count) example events\n\(services.logs())")
                }
                if id == "listDeadLetters" { try await Self.writeDeadLetters(on: connection) }
                try await run.drive(operation)
            }
            // The verifier refused none: the examples are impressions, conversions, updates and activity it takes.
            let refusals = ["listAdNetworkRejections", "listAdvertisedAppRejections"].map { run.answers[$0]?["rejections"] }
            #expect(refusals == [.array([]), .array([])], "\(refusals)")
            #expect(run.answers["listAdNetworkRejections"]?["unsigned-rejections"] == .array([]))
            await connection.close()
        }

        /// Two dead letters as the dispatcher writes them (a network that answered 503 ten times), for
        /// the dead-letter routes: no dispatcher runs here.
        static func writeDeadLetters(on connection: RedisConnection) async throws {
            for _ in 0..<2 {
                let id = UUID().uuidString.lowercased()
                let payload = PostbackPayload(
                    adNetworkIdentifier: AdNetworkIdentifier(network)!, sourceIdentifier: "34",
                    advertisedItemIdentifier: advertised,
                    publisherItemIdentifier: nil, conversionType: .download,
                    marketplaceIdentifier: PostbackPayload.appStoreMarketplace,
                    postbackIdentifier: id, postbackSequenceIndex: 0, didWin: true)
                let order = PostbackOrder(
                    payload: payload, adInteractionType: .click, conversionValue: nil, coarseConversionValue: .high,
                    countryCode: nil,
                    isDevelopment: false)
                let retry = DeliveryRetry(
                    postbackIdentifier: id, url: "https://postbacks.example.com/adattributionkit", body: "{}", attempts: 10,
                    firstAttemptAt: WallClock.nowMilliseconds() - 60_000, lastError: "HTTP 503", order: order)
                let fields = DispatcherStage.deadLetterFields(retry, reason: "HTTP 503")
                let stream = StreamNames.deliveriesDead(testPartitioning.partitions[0])
                _ = try await connection.send(RedisCommand(["XADD", stream, "*"] + fields))
            }
        }
    }
}
