import AttributionModel
import Foundation
import Hummingbird
import PipelineCatalog
import RedisStreams
import ServiceRuntime

/// Test postbacks for an ad network's receiver (Apple's developer-settings postbacks, server side): the
/// network asks with one of its credentials on the public listener, an operator with `ADMIN_TOKEN` on
/// the admin service. The request goes on `events` like any event and through every stage; the
/// scheduler makes its postbacks due at once and the dispatcher signs them with the development key and
/// sends them to the network's registered URL (copies, retries and dead letters as for any postback).
/// At most `perMinute` requests a minute per network, counted in Redis so every ingest replica agrees.
public struct TestPostbackRequests: Sendable {
    let redis: RedisConnection
    let partitioning: Partitioning
    let clock: @Sendable () -> Milliseconds
    static let perMinute = 10
    static let bodyLimit = 16_384

    public init(redis: RedisConnection, partitioning: Partitioning, clock: @escaping @Sendable () -> Milliseconds) {
        self.redis = redis
        self.partitioning = partitioning
        self.clock = clock
    }

    /// Validates the request for `network`, takes one of its allowance and puts it on `events`: 202
    /// with the postbacks' identifiers.
    public func send(for network: String, _ request: Request) async throws -> Response {
        let body = try await request.collectBody(limit: Self.bodyLimit)
        var asked = try Request.decodeJSON(TestPostbackRequest.self, from: body)
        // A misspelt choice (`teir`, `did_win`) would be a test of something else.
        if let unknown = UnknownMembers.paths(inJSON: body, comparedWith: asked).first {
            throw ProblemDetails.badRequest(.unknownKey, "\(unknown) is not a member of a test-postback request")
        }
        guard asked.postbackIdentifiers.isEmpty else {
            throw ProblemDetails.badRequest(.unknownKey, "postback-identifiers is not a member of a test-postback request")
        }
        guard asked.adNetworkIdentifier == TestPostbackRequest.unnamed || asked.adNetworkIdentifier.rawValue == network else {
            throw ProblemDetails.badRequest(.invalidBody, "ad-network-identifier must be the path's (\(network)) or absent")
        }
        asked.adNetworkIdentifier = AdNetworkIdentifier(network) ?? asked.adNetworkIdentifier
        do { try asked.validate() } catch { throw ProblemDetails(describing: error) }
        guard try await redis.send(RedisCommand("HEXISTS", RegistryKeys.adNetworks, network)).int == 1 else {
            throw ProblemDetails(.notFound, reason: .unknownAdNetwork, detail: "ad network \(network) is not registered")
        }
        try await takeAllowance(network)
        asked.postbackIdentifiers = (0..<TestPostbacks.count(asked)).map { _ in RandomUUID.make() }
        let envelope = Envelope(time: clock(), body: .testPostbacksRequested(asked))
        let partition = partitioning.of(device: "test-postbacks:\(network)")
        let written = try await redis.send(StreamCommands.add(StreamNames.events(partition), message: try envelope.encoded()))
        if let message = written.errorMessage {
            throw ProblemDetails(
                .serviceUnavailable, reason: .redisUnreachable, detail: "Redis refused the write (\(message.prefix(80)))")
        }
        var answer: [String: Any] = [
            "ad-network-identifier": network, "event-identifier": envelope.id,
            "postback-identifiers": asked.postbackIdentifiers, "tier": asked.tier, "development": true,
        ]
        if let tag = asked.conversionTag { answer["conversion-tag"] = tag }
        return try JSONAnswer.object(answer, status: .accepted)
    }

    /// One of the network's `perMinute` requests in the current minute (a window that starts with the
    /// first), or 429 `rate-limited` until it ends.
    private func takeAllowance(_ network: String) async throws {
        let key = "ingest:test-postbacks:\(network)"
        let replies = try await redis.pipeline([
            RedisCommand("SET", key, "0", "PX", "60000", "NX"), RedisCommand("INCR", key), RedisCommand("PTTL", key),
        ])
        guard let count = replies[1].int, count > Self.perMinute else { return }
        let left = max(1, Int(((replies[2].int ?? 60_000) + 999) / 1_000))
        throw ProblemDetails(
            .tooManyRequests, reason: .rateLimited,
            detail:
                "ad network \(network) asked for test postbacks \(Self.perMinute) times this minute; retry after Retry-After seconds",
            retryAfterSeconds: left)
    }
}
