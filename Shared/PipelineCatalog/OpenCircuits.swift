import AttributionModel
import Foundation
import RedisStreams

/// The postback destinations whose circuit is open on one dispatcher replica (`DestinationCircuit`), as
/// the replica reports them under `StageKeys.dispatcherCircuits`. Destinations are ad networks' and
/// advertisers' endpoints (scheme, host, port): no device data.
public struct OpenCircuits: Sendable, Codable, Hashable {
    public struct Circuit: Sendable, Codable, Hashable {
        public var destination: String
        /// When the next probe may go (ms since 1970); nil: a probe is under way.
        public var probeAt: Milliseconds?
        /// Failed attempts in a row.
        public var failures: Int

        public init(destination: String, probeAt: Milliseconds?, failures: Int) {
            self.destination = destination
            self.probeAt = probeAt
            self.failures = failures
        }

        enum CodingKeys: String, CodingKey {
            case destination, failures
            case probeAt = "probe-at"
        }
    }

    /// The dispatcher replica (its consumer name).
    public var replica: String
    /// When the replica wrote this (ms since 1970): a report older than `freshness` is a stopped replica's.
    public var reportedAt: Milliseconds
    public var circuits: [Circuit]

    /// How often a replica rewrites its report, and how old one may be before it is ignored.
    public static let interval: Duration = .seconds(5)
    public static let freshness: Milliseconds = 30_000

    public init(replica: String, reportedAt: Milliseconds, circuits: [Circuit]) {
        self.replica = replica
        self.reportedAt = reportedAt
        self.circuits = circuits
    }

    enum CodingKeys: String, CodingKey {
        case replica, circuits
        case reportedAt = "reported-at"
    }

    /// The fresh reports in an `HGETALL` reply of the key, oldest replica name first.
    public static func fresh(in reply: RedisReply, now: Milliseconds) -> [OpenCircuits] {
        reply.fieldMap.values.compactMap { value in
            value.bytes.flatMap { try? JSONCoding.decoder.decode(OpenCircuits.self, from: Data($0)) }
        }
        .filter { now - $0.reportedAt <= freshness && !$0.circuits.isEmpty }
        .sorted { $0.replica < $1.replica }
    }
}
