import AttributionCrypto
import Foundation
import Hummingbird
import Logging

/// The receiver's routes, assembled apart from the command so tests can drive them in memory.
enum ReceiverRouter {
    /// Where the pipeline POSTs: the ad network's URL and the advertiser copy path (spec §6).
    static let postbackPaths = ["/postbacks", "/.well-known/appattribution/report-attribution/"]
    /// Postbacks are a few hundred bytes; anything this large is not one.
    static let maximumBodySize = 64 * 1024

    static func build(
        log: PostbackLog, keys: KeySetCache, flaky: FlakyMode = FlakyMode(settings: .init()), collector: Collector? = nil,
        logger: Logger
    ) -> Router<BasicRequestContext> {
        build(ReceiverIntake(log: log, keys: keys, flaky: flaky, collector: collector, logger: logger))
    }

    static func build(_ intake: ReceiverIntake) -> Router<BasicRequestContext> {
        let (log, flaky, collector) = (intake.log, intake.flaky, intake.collector)
        let router = Router(context: BasicRequestContext.self)
        for path in postbackPaths {
            router.post(RouterPath(path)) { request, _ in
                var request = request
                let body = Data(try await request.collectBody(upTo: maximumBodySize).readableBytesView)
                return response(await intake.answer(body: body, path: request.uri.path))
            }
        }
        if let collector {
            router.get("/report") { _, _ in JSONResponse.make(await collector.document) }
            router.get("/report.csv") { _, _ in
                var headers = HTTPFields()
                headers[.contentType] = "text/csv; charset=utf-8"
                return Response(
                    status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: await collector.report.csv())))
            }
        }
        router.get("/health") { _, _ in HTTPResponse.Status.ok }
        router.get("/stats") { _, _ in JSONResponse.make(log.currentStats()) }
        router.get("/attempts") { _, _ in JSONResponse.make(flaky.attempts) }
        router.get("/control") { _, _ in JSONResponse.make(flaky.settings) }
        router.post("/control") { request, _ in
            var request = request
            let body = Data(try await request.collectBody(upTo: 4_096).readableBytesView)
            guard let settings = try? JSONDecoder().decode(FlakyMode.Settings.self, from: body) else {
                return ProblemDetails(
                    status: .badRequest, reason: "invalid-control",
                    detail:
                        "expected {\"fail-first\", \"fail-share\", \"failure\", \"failure-status\", \"hang-seconds\", \"delay-ms\", \"redirect-to\"}"
                ).response
            }
            if let problem = settings.problem {
                return ProblemDetails(status: .badRequest, reason: "invalid-control", detail: problem).response
            }
            flaky.update(settings)
            return JSONResponse.make(settings)
        }
        return router
    }

    static func response(_ answer: ReceiverIntake.Answer) -> Response {
        var headers = HTTPFields()
        if !answer.body.isEmpty { headers[.contentType] = answer.contentType }
        if let location = answer.location { headers[.location] = location }
        return Response(status: answer.status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: answer.body)))
    }

    /// Looks the kid up first so an unknown kid triggers one key set refetch before verification. A
    /// SKAdNetwork body names no kid: it is tried against the cached keys, then once against fresh ones.
    static func verify(_ body: Data, keys: KeySetCache) async throws -> VerifiedPostback {
        guard try PostbackBodyVerifier.kind(of: body) == .skAdNetwork else {
            // Parsed once: the kid picks the key set, and the same parse is verified.
            let parsed = try PostbackVerifier.parse(body: body)
            return try PostbackVerifier.verify(parsed, keys: await keys.keySet(containing: parsed.keyID))
        }
        do {
            return try PostbackVerifier.verifyAny(body: body, keys: await keys.cachedOrFetched())
        } catch {
            return try PostbackVerifier.verifyAny(body: body, keys: await keys.refetched())
        }
    }
}
