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

    /// Nil when postbacks may go to `url`, else why not.
    public func check(_ url: String) async -> DestinationPolicy.Refusal? {
        if let refusal = policy.check(url: url) { return refusal }
        guard let destination = DestinationPolicy.parse(url), !policy.isAllowListed(destination) else { return nil }
        if IPAddress(destination.host) != nil { return nil }  // a literal: already classified
        let host = destination.host
        let now = ContinuousClock.now
        if let cached = cache.answers.withLock({ $0[host] }), cached.expires > now {
            return policy.check(url: url, resolved: cached.addresses)
        }
        let addresses = (try? await NIOThreadPool.singleton.runIfActive { Self.resolve(host) }) ?? []
        if !addresses.isEmpty {  // a failed lookup is tried again next time
            cache.answers.withLock { answers in
                if answers.count > 10_000 { answers.removeAll() }
                answers[host] = (addresses, now + .milliseconds(Int64(cacheSeconds * 1000)))
            }
        }
        return policy.check(url: url, resolved: addresses)
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
