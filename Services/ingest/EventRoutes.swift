import AttributionModel
import Foundation
import HTTPAPI
import Hummingbird
import PipelineCatalog
import RedisStreams
import ServiceRuntime

/// The event API: each accepted event is on `events` (Redis, AOF) before its 202 goes out, so nothing
/// acknowledged is lost. Impressions authenticate by their signature (the verifier's check);
/// conversions and updates by the advertised app's key. Every route has a batch form (`…/batch`, up
/// to 1,000 items, each answered on its own). `Admission` refuses work at once past ingest's bounds.
struct EventRoutes {
    let redis: RedisConnection
    let maxBodyBytes: Int
    let maxBatchBodyBytes: Int
    /// How long a key no dispatcher signs with any more stays in the JWKS.
    let signingKeyGrace: Milliseconds
    let publisher: EventPublisher
    let admission: Admission
    let outcomes: OutcomeWaits
    let clock: @Sendable () -> Milliseconds

    struct Accepted: Encodable {
        let eventIdentifier: String
        /// Re-engagements: the `AdAttributionKitReengagementOpen` value updates may carry.
        var conversionTag: String? = nil
        /// Re-engagements with a `reengagement-url`: the URL to open the app with, tag appended.
        var openURL: String? = nil
        /// With `Prefer: wait`: `created`, `not-created` (and `reason`) or `pending`.
        var conversion: String? = nil
        var reason: String? = nil
        enum CodingKeys: String, CodingKey {
            case eventIdentifier = "event-identifier"
            case conversionTag = "conversion-tag"
            case openURL = "open-url"
            case conversion, reason
        }

        /// The 202, in the sorted-keys encoding of `Response.json`. Spliced, not encoded: the answer of
        /// every single-event request, and a JSONEncoder costs a few µs of ingest's ~60 per request. Ids
        /// are ingest's own (UUIDs), so nothing needs escaping; anything else goes through the encoder.
        var response: Response {
            guard Self.plain(eventIdentifier), conversionTag.map(Self.plain) ?? true, openURL == nil, conversion == nil else {
                return Response.json(self, status: .accepted)
            }
            var body = ByteBuffer()
            body.reserveCapacity(96)
            if let conversionTag { body.writeString("{\"conversion-tag\":\"\(conversionTag)\",") } else { body.writeString("{") }
            body.writeString("\"event-identifier\":\"\(eventIdentifier)\"}")
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            return Response(status: .accepted, headers: headers, body: .init(byteBuffer: body))
        }

        private static func plain(_ text: String) -> Bool {
            text.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }
        }
    }

    func add(to router: Router<BasicRequestContext>, catalog: RouteCatalog) {
        for kind in EventKind.allCases {
            catalog.on(router, .post, kind.path) { request, _ in try await single(kind, request) }
            catalog.on(router, .post, kind.batchPath) { request, _ in try await batch(kind, request) }
        }
        EvaluationRoutes(redis: redis, maxBodyBytes: maxBodyBytes, appKeys: publisher.appKeys).add(
            to: router, catalog: catalog)
        catalog.on(router, .get, "/.well-known/jwks.json") { _, _ -> Response in
            // The dispatchers publish their public keys and say which they still sign with; ingest
            // serves those, and retired ones until their grace ends.
            let replies = try await redis.pipeline([
                RedisCommand("HGETALL", RegistryKeys.jwks), RedisCommand("HGETALL", RegistryKeys.jwksSeen),
            ])
            let keys = KeySetPublication.served(
                published: replies[0].fieldMap.compactMapValues(\.string),
                lastSigned: replies[1].fieldMap.compactMapValues { $0.string.flatMap { Milliseconds($0) } }, now: clock(),
                grace: signingKeyGrace
            ).joined(separator: ",")
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            headers[.cacheControl] = "max-age=60"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: "{\"keys\":[\(keys)]}")))
        }
    }

    /// One event: 202 with its id, or the problem.
    private func single(_ kind: EventKind, _ request: Request) async throws -> Response {
        // Cheap refusals first: no key, or no room, costs no body and no parsing.
        if kind.needsAppKey { try Self.requireAppKey(request) }
        try admission.check()
        let body = try await request.collectBody(limit: maxBodyBytes)
        let started = ContinuousClock.now
        let decoded = try kind.decode(
            body, appKey: request.bearerToken, idempotencyKey: request.idempotencyKey, inBatch: false, receivedAt: clock(),
            withCaller: admission.limits.callerRate > 0)
        if let caller = decoded.caller {
            let (granted, retryAfter) = admission.take(1, caller: caller)
            if granted == 0 { throw Admission.rateLimited(caller, retryAfter: retryAfter, rate: admission.limits.callerRate) }
        }
        try admission.reserve(1)
        var released = false
        defer { if !released { admission.release(1) } }
        admission.record(ContinuousClock.now - started)
        let id: String
        switch try await publisher.publish([decoded.event])[0] {
        case .success(let published): id = published
        case .failure(let problem): throw problem
        }
        IngestMetrics.accepted.increment()
        admission.release(1)
        released = true
        var accepted = Accepted(
            eventIdentifier: id, conversionTag: decoded.event.tagged ? id : nil,
            openURL: decoded.reengagementURL.map { ReengagementOpenURL.opening($0, tag: id) })
        guard decoded.event.tagged, let seconds = OutcomeWaits.preferredSeconds(request.headers) else {
            return accepted.response
        }
        // The event is on `events`: waiting only tells the caller more, it holds no admission slot.
        let outcome = await outcomes.outcome(tag: id, device: decoded.event.device, within: seconds)
        accepted.conversion = outcome?.conversion ?? "pending"
        accepted.reason = outcome?.reason
        var response = accepted.response
        response.headers[.preferenceApplied] = "wait=\(seconds)"
        return response
    }

    /// Up to 1,000 events: 200 with one result per item, in order.
    private func batch(_ kind: EventKind, _ request: Request) async throws -> Response {
        if kind.needsAppKey { try Self.requireAppKey(request) }
        // Before any work: a key too long for `<key>:<i>` would refuse items one by one.
        if let key = request.idempotencyKey { try RequestChecks.batchIdempotencyKey(key) }
        try admission.check()
        // Decoding up to 1,000 items takes milliseconds of CPU: on Swift's pool, not on the connection's
        // event loop (where single-event requests run), whose other connections it would hold up and
        // whose lateness `Admission` would read as a queue. Two hand-offs more, over a whole batch.
        return try await withTaskExecutorPreference(globalConcurrentExecutor) {
            try await decodeAndPublish(kind, request)
        }
    }

    private func decodeAndPublish(_ kind: EventKind, _ request: Request) async throws -> Response {
        let body = try await request.collectBody(limit: maxBatchBodyBytes)
        let started = ContinuousClock.now
        let ranges: [Range<Int>]
        do {
            ranges = try BatchBody.items(in: body, format: .init(contentType: request.headers[.contentType]))
        } catch {
            throw ProblemDetails(
                error.reason == .batchTooLarge ? .contentTooLarge : .badRequest, reason: error.reason, detail: error.detail)
        }
        let receivedAt = clock()
        let headerKey = request.idempotencyKey
        var results = [Result<BatchAnswer.Accepted, ProblemDetails>?](repeating: nil, count: ranges.count)
        var decoded: [(index: Int, item: EventKind.Decoded)] = []
        for (index, range) in ranges.enumerated() {
            // An item is held to a single request's body limit: a batch carries events, not larger ones.
            guard range.count <= maxBodyBytes else {
                results[index] = .failure(
                    ProblemDetails(
                        .contentTooLarge, reason: .bodyTooLarge,
                        detail: "an item is limited to \(maxBodyBytes) bytes (MAX_BODY_BYTES), as a single request's body"))
                continue
            }
            do {
                let item = try kind.decode(
                    body[range], appKey: request.bearerToken, idempotencyKey: headerKey.map { "\($0):\(index)" },
                    inBatch: true, receivedAt: receivedAt, withCaller: admission.limits.callerRate > 0)
                decoded.append((index, item))
            } catch {
                results[index] = .failure(ProblemDetails(describing: error))
            }
        }
        decoded = rateLimit(decoded, into: &results)
        try admission.reserve(decoded.count)
        defer { admission.release(decoded.count) }
        // Per item: a large batch's own work is not a queue.
        admission.record((ContinuousClock.now - started) / ranges.count)
        let published = try await publisher.publish(decoded.map(\.item.event))
        for ((index, item), result) in zip(decoded, published) {
            results[index] = result.map {
                BatchAnswer.Accepted(
                    id: $0, tagged: item.event.tagged,
                    openURL: item.reengagementURL.map { [id = $0] in ReengagementOpenURL.opening($0, tag: id) })
            }
        }
        let answer = BatchAnswer(results.map { $0! })
        IngestMetrics.accepted.increment(by: answer.accepted)
        var response = Response.json(answer, status: .ok)
        if let retryAfter = answer.retryAfter { response.headers[.retryAfter] = retryAfter }
        return response
    }

    /// Items past their caller's rate are answered 429; the rest go on, in order.
    private func rateLimit(
        _ items: [(index: Int, item: EventKind.Decoded)], into results: inout [Result<BatchAnswer.Accepted, ProblemDetails>?]
    ) -> [(index: Int, item: EventKind.Decoded)] {
        guard admission.limits.callerRate > 0 else { return items }
        var counts: [String: Int] = [:]
        for (_, item) in items { counts[item.caller ?? "-", default: 0] += 1 }
        var allowance: [String: (granted: Int, retryAfter: Milliseconds)] = [:]
        for (caller, count) in counts { allowance[caller] = admission.take(count, caller: caller) }
        return items.filter { index, item in
            let caller = item.caller ?? "-"
            guard let granted = allowance[caller]?.granted, granted > 0 else {
                results[index] = .failure(
                    Admission.rateLimited(
                        caller, retryAfter: allowance[caller]?.retryAfter ?? 1_000, rate: admission.limits.callerRate))
                return false
            }
            allowance[caller]?.granted = granted - 1
            return true
        }
    }

    /// Unauthenticated callers learn nothing about bodies: no key, no parsing.
    static func requireAppKey(_ request: Request) throws {
        guard let key = request.bearerToken, !key.isEmpty else {
            throw ProblemDetails.missingAppKey
        }
    }
}

/// A batch's answer: counts, and one result per item in order (an accepted item's id, or its problem).
struct BatchAnswer: Encodable {
    /// An accepted item: its event id, whether it is a re-engagement (its tag is the id), its open URL.
    struct Accepted {
        var id: String
        var tagged: Bool
        var openURL: String?
    }

    struct Item: Encodable {
        var status: Int
        var eventIdentifier: String?
        var conversionTag: String?
        var openURL: String?
        var type: String?
        var title: String?
        var reason: ProblemReason?
        var detail: String?

        enum CodingKeys: String, CodingKey {
            case status, type, title, reason, detail
            case eventIdentifier = "event-identifier"
            case conversionTag = "conversion-tag"
            case openURL = "open-url"
        }
    }

    var accepted = 0
    var refused = 0
    var results: [Item] = []
    /// The longest `Retry-After` an item asks for (a 429 or 503 item), as the response's header.
    var retryAfter: String? { problems.compactMap(\.retryAfter).compactMap(Int.init).max().map(String.init) }
    private var problems: [ProblemDetails] = []

    enum CodingKeys: String, CodingKey { case accepted, refused, results }

    init(_ results: [Result<Accepted, ProblemDetails>]) {
        for result in results {
            switch result {
            case .success(let item):
                accepted += 1
                self.results.append(
                    Item(
                        status: 202, eventIdentifier: item.id, conversionTag: item.tagged ? item.id : nil,
                        openURL: item.openURL))
            case .failure(let problem):
                refused += 1
                problems.append(problem)
                self.results.append(
                    Item(
                        status: problem.statusCode, eventIdentifier: problem.eventIdentifier, type: problem.type,
                        title: problem.title, reason: problem.reason, detail: problem.detail))
            }
        }
    }
}

extension ProblemDetails {
    /// An app route called without `Authorization: Bearer <app key>`.
    static let missingAppKey = ProblemDetails(
        .unauthorized, reason: .missingAppKey,
        detail: "conversions and updates need the app's key: Authorization: Bearer <app key>")
}

extension Request {
    /// The `Idempotency-Key` header (RFC draft: a retry with the same key gets the first answer).
    var idempotencyKey: String? {
        headers.first { $0.name.canonicalName == "idempotency-key" }?.value
    }

    /// The token of an `Authorization: Bearer …` header.
    var bearerToken: String? { headers.bearerToken }
}

extension HTTPFields {
    /// The token of an `Authorization: Bearer …` header (a route's request, or a head the listener
    /// refuses early).
    var bearerToken: String? {
        guard let header = self[.authorization], header.hasPrefix("Bearer ") else { return nil }
        return String(header.dropFirst(7))
    }
}
