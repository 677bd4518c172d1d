/// The one error type of this module: an opaque code plus a message that is safe to log.
public struct RedisError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What kind of failure this is; compare against the static members.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable {
            case connectionFailed, tlsFailed, io, server, protocolError, closed
            case invalidConfiguration, invalidArgument, unexpectedReply
            case crossSlot, redirected
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The TCP connect, or the SELECT after it, failed.
        public static let connectionFailed = Code(.connectionFailed)
        /// TLS refused the server (its certificate's CA, name or dates, a client certificate it wanted, a
        /// peer that does not speak TLS), or a server closed at once on a plaintext client, as a TLS
        /// port does: a configuration that does not match the server, which retrying will not mend.
        public static let tlsFailed = Code(.tlsFailed)
        /// Reading or writing the socket failed or timed out; the connection is dropped and reconnects on next use.
        public static let io = Code(.io)
        /// Redis answered with an error reply; the message is the server's text.
        public static let server = Code(.server)
        /// hiredis could not parse what the server sent.
        public static let protocolError = Code(.protocolError)
        /// The connection was closed by its owner and cannot be used any more.
        public static let closed = Code(.closed)
        /// A configuration value (such as a URL) is malformed.
        public static let invalidConfiguration = Code(.invalidConfiguration)
        /// A caller passed something Redis cannot accept (an empty command, a BLOCK longer than the timeout).
        public static let invalidArgument = Code(.invalidArgument)
        /// A reply did not have the shape the command documents.
        public static let unexpectedReply = Code(.unexpectedReply)
        /// A transaction, script or multi-key command has keys in several hash slots, which Redis Cluster
        /// cannot run on one node; thrown before anything is sent (in cluster mode, or with `checksSlots`).
        public static let crossSlot = Code(.crossSlot)
        /// Cluster mode: a transaction met a moved or migrating slot, so nothing of it ran, and resending it
        /// is not safe (its WATCH went out in an earlier pipeline, or the slot's keys are split mid-migration):
        /// redo the whole read-decide-write cycle, which then reaches the slot's new node.
        public static let redirected = Code(.redirected)

        /// The code's name.
        public var description: String { self.base.rawValue }
    }

    /// What kind of failure this is.
    public let code: Code
    /// Human-readable detail: hiredis's error string or the server's error text.
    public let message: String

    /// Creates an error with a code and a message.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// For server errors, the reply's first word (`BUSYGROUP`, `NOSCRIPT`, `WRONGTYPE`, `ERR`); nil otherwise.
    public var serverErrorPrefix: String? {
        guard self.code == .server else { return nil }
        return self.message.split(separator: " ", maxSplits: 1).first.map(String.init)
    }

    /// `redis <code>: <message>`.
    public var description: String { "redis \(self.code): \(self.message)" }

    /// Whether Redis itself was unavailable (unreachable, timing out, loading, failing over, resharding)
    /// rather than refusing what was sent: a worker that meets it has not failed its entries.
    public var isUnavailability: Bool {
        switch self.code {
        case .connectionFailed, .tlsFailed, .io, .redirected: return true
        case .server: return self.message.split(separator: " ").contains { Self.unavailableReplies.contains(String($0)) }
        default: return false
        }
    }

    /// Error replies of a Redis that is not serving now (also when a caller quoted them in its message).
    private static let unavailableReplies: Set<String> = [
        "LOADING", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "READONLY", "NOREPLICAS", "MOVED", "ASK", "BUSY",
    ]
}
