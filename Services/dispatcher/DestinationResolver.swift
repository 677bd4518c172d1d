import AttributionModel
import NIOPosix
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Applies `DestinationPolicy` to a URL, resolving its host with the system resolver (getaddrinfo, on
/// NIO's blocking-I/O pool, never the cooperative one). The dispatcher checks before every POST, since
/// DNS answers can change after registration; answers are cached briefly so a batch resolves once.
public struct DestinationResolver: Sendable {
    public let policy: DestinationPolicy
    /// Answers are reused for `cacheSeconds`: a batch of postbacks to one host resolves it once.
    private let cache = AnswerCache()
    public var cacheSeconds: Double = 30

    public init(policy: DestinationPolicy) { self.policy = policy }

    final class AnswerCache: Sendable {
        let answers = Mutex<[String: (addresses: [IPAddress], expires: ContinuousClock.Instant)]>([:])
    }

    /// Where a POST to a URL may go.
    public enum Resolution: Sendable, Equatable {
        /// Not at all, and why.
        case refused(DestinationPolicy.Refusal)
        /// To the URL as it is: an IP literal (already classified) or an allow-listed host.
        case direct
        /// To `address`, the checked answer for `host`: the connection must use it, not a second lookup
        /// whose answer could have changed (DNS rebinding), keeping the name for Host and TLS SNI.
        case pinned(host: String, address: IPAddress)
    }

    /// Checks `url` and says which address a POST must connect to.
    public func resolve(_ url: String) async -> Resolution { await resolve(DestinationPolicy.parse(url)) }

    /// `resolve` on a parsed URL (nil: one that did not parse), for a caller that needs its parts too.
    public func resolve(_ destination: DestinationPolicy.Destination?) async -> Resolution {
        if let refusal = policy.check(destination) { return .refused(refusal) }
        guard let destination, !policy.isAllowListed(destination) else { return .direct }
        if IPAddress(destination.host) != nil { return .direct }  // a literal: already classified
        let host = destination.host
        let now = ContinuousClock.now
        var addresses: [IPAddress]
        if let cached = cache.answers.withLock({ $0[host] }), cached.expires > now {
            addresses = cached.addresses
        } else {
            addresses = (try? await NIOThreadPool.singleton.runIfActive { Self.resolve(host) }) ?? []
            if !addresses.isEmpty {  // a failed lookup is tried again next time
                cache.answers.withLock { answers in
                    if answers.count > 10_000 { answers.removeAll() }
                    answers[host] = (addresses, now + .milliseconds(Int64(cacheSeconds * 1000)))
                }
            }
        }
        if let refusal = policy.check(destination, resolved: addresses) { return .refused(refusal) }
        // Every answer is public (checked above); the first is the one connected to.
        return addresses.first.map { .pinned(host: host, address: $0) } ?? .refused(.unresolvable)
    }

    static func resolve(_ host: String) -> [IPAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return [] }
        defer { freeaddrinfo(list) }
        var addresses: [IPAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let info = cursor {
            if let sockaddr = info.pointee.ai_addr {
                switch info.pointee.ai_family {
                case AF_INET:
                    sockaddr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                        var address = pointer.pointee.sin_addr
                        addresses += IPAddress(bytes: withUnsafeBytes(of: &address) { Array($0) }).map { [$0] } ?? []
                    }
                case AF_INET6:
                    sockaddr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                        var address = pointer.pointee.sin6_addr
                        addresses += IPAddress(bytes: withUnsafeBytes(of: &address) { Array($0) }).map { [$0] } ?? []
                    }
                default: break
                }
            }
            cursor = info.pointee.ai_next
        }
        return addresses
    }
}
