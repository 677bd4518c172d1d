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
        let router = Router(context: BasicRequestContext.self)
        for path in postbackPaths {
            router.post(RouterPath(path)) { request, _ in
                try await receive(request, log: log, keys: keys, flaky: flaky, collector: collector, logger: logger)
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
        router.get("/stats") { _, _ in JSONResponse.make(await log.currentStats()) }
        router.get("/attempts") { _, _ in JSONResponse.make(await flaky.attempts) }
        router.get("/control") { _, _ in JSONResponse.make(await flaky.settings) }
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
            await flaky.update(settings)
            return JSONResponse.make(settings)
        }
        return router
    }

    static func receive(
        _ request: Request, log: PostbackLog, keys: KeySetCache, flaky: FlakyMode, collector: Collector? = nil,
        logger: Logger
    ) async throws -> Response {
        var request = request
        let body = Data(try await request.collectBody(upTo: maximumBodySize).readableBytesView)
        let path = request.uri.path
        let postback: VerifiedPostback
        do {
            postback = try await verify(body, keys: keys)
        } catch let error as JWSError {
            await log.countRejected()
            logger.debug("Rejected postback", metadata: ["postback.path": "\(path)", "postback.reason": "\(error)"])
            return ProblemDetails(
                status: .badRequest, reason: error.code.rawValue, detail: error.reason
            ).response
        } catch {
            // The key set could not be fetched: not the sender's fault, so an answer it will retry.
            return ProblemDetails(
                status: .serviceUnavailable, reason: "keys-unavailable",
                detail: "\(error)"
            ).response
        }
        let now = WallClock.now()
        let delay = await flaky.settings.delayMilliseconds
        if delay > 0 { try? await Task.sleep(for: .milliseconds(delay)) }
        if await flaky.shouldFail(postbackIdentifier: postback.payload.postbackIdentifier, path: path, at: now) {
            let settings = await flaky.settings
            if settings.failure == .timeout {
                try? await Task.sleep(for: .milliseconds(Int64(settings.hangSeconds * 1000)))
                return Response(status: .gatewayTimeout)
            }
            if settings.failure == .redirect, let target = settings.redirectTo {
                var headers = HTTPFields()
                headers[.location] = target
                return Response(status: .temporaryRedirect, headers: headers)
            }
            return ProblemDetails(
                status: .init(code: settings.failureStatus), reason: "flaky-receiver",
                detail: "failing on purpose (fail-first \(settings.failFirst), fail-share \(settings.failShare))"
            ).response
        }
        let isNew = try await log.record(postback, path: path, body: body, receivedAt: now)
        // Counted once: a redelivered postback (same path and id) is acknowledged, not collected again.
        if isNew, let collector { await collector.collect(postback) }
        logger.debug(
            "Accepted postback",
            metadata: [
                "postback.identifier": "\(postback.payload.postbackIdentifier)",
                "postback.ad_network": "\(postback.payload.adNetworkIdentifier)",
                "postback.sequence_index": "\(postback.payload.postbackSequenceIndex)",
                "postback.did_win": "\(postback.payload.didWin)", "postback.path": "\(path)",
                "postback.duplicate": "\(!isNew)",
            ])
        // Duplicates are answered 200 too: the sender did nothing wrong by retrying.
        return JSONResponse.make(Acknowledgement(postbackIdentifier: postback.payload.postbackIdentifier, duplicate: !isNew))
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

    struct Acknowledgement: Codable {
        var postbackIdentifier: String
        var duplicate: Bool

        enum CodingKeys: String, CodingKey {
            case postbackIdentifier = "postback-identifier"
            case duplicate
        }
    }
}
