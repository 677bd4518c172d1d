import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where postbacks may go: https URLs whose host resolves only to public addresses, so a registered
/// postback URL (or an app's copy endpoint) cannot make the dispatcher reach into the operator's own
/// network. Hosts on the allow-list (`POSTBACK_URL_ALLOWLIST`: tests, demos, an in-cluster receiver)
/// may use http and private addresses.
public struct DestinationPolicy: Sendable, Hashable {
    public enum Refusal: String, Sendable, Hashable, Error {
        /// Not an absolute URL with a host, or a scheme other than http(s).
        case invalid = "destination-invalid"
        case notHTTPS = "destination-not-https"
        /// The host is, or resolves to, a loopback, private, link-local or otherwise non-public address.
        case privateAddress = "destination-private-address"
        case unresolvable = "destination-unresolvable"
    }

    /// Lowercased hosts, or `host:port`, exempt from the https and public-address rules.
    public let allowedHosts: Set<String>
    /// Where a copy endpoint's registrable domain ends (`CopyEndpoint`): the services load the list
    /// from `PUBLIC_SUFFIX_LIST`; empty here, so only the implicit rule `*` applies.
    public var publicSuffixes = PublicSuffixList()

    public init(allowedHosts: Set<String> = []) {
        self.allowedHosts = Set(allowedHosts.map { $0.lowercased() })
    }

    /// Parses `POSTBACK_URL_ALLOWLIST`: comma-separated hosts or host:port pairs.
    public init(allowList: String?) {
        self.init(
            allowedHosts: Set(
                (allowList ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            ))
    }

    /// The parts of a destination URL the rules look at.
    public struct Destination: Sendable, Hashable {
        public var scheme: String
        /// Lowercased, without IPv6 brackets.
        public var host: String
        public var port: Int?
        /// What follows the authority, fragment dropped: the path and query as written ("" for none).
        /// The dispatcher's request target (`PostbackPoster.requestTarget`).
        public var pathAndQuery: String = ""
    }

    /// Splits `scheme://host[:port]/...` (no user info accepted: it only ever hides the real host).
    public static func parse(_ url: String) -> Destination? {
        // Postback URLs are ASCII, where a byte is a character (CR LF aside, refused either way as
        // whitespace): the byte scan reads what the character scan reads, without Foundation's search
        // and grapheme breaking, which were 8 % of the dispatcher's CPU (it parses on every delivery).
        if url.utf8.allSatisfy({ $0 < 0x80 }) { return parse(ascii: Array(url.utf8)) }
        return parse(text: url)
    }

    /// `parse` on an ASCII URL's bytes.
    static func parse(ascii bytes: [UInt8]) -> Destination? {
        let colon = UInt8(ascii: ":")
        let slash = UInt8(ascii: "/")
        guard
            let schemeEnd = bytes.indices.dropLast(2).first(where: {
                bytes[$0] == colon && bytes[$0 + 1] == slash && bytes[$0 + 2] == slash
            })
        else { return nil }
        let authority = bytes[(schemeEnd + 3)...].prefix { $0 != slash && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") }
        guard !authority.contains(where: { $0 == 0x20 || (0x09...0x0D).contains($0) }),
            let (host, port) = split(
                authority: authority, colon: colon, at: UInt8(ascii: "@"), brackets: (UInt8(ascii: "["), UInt8(ascii: "]")),
                number: { Int(String(decoding: $0, as: UTF8.self)) })
        else { return nil }
        let lowercased = { (text: ArraySlice<UInt8>) in
            String(decoding: text.map { (65...90).contains($0) ? $0 + 32 : $0 }, as: UTF8.self)
        }
        let rest = bytes[authority.endIndex...]
        return Destination(
            scheme: lowercased(bytes[..<schemeEnd]), host: lowercased(host), port: port,
            pathAndQuery: String(decoding: rest.prefix { $0 != UInt8(ascii: "#") }, as: UTF8.self))
    }

    /// `parse` on any text, character by character.
    static func parse(text url: String) -> Destination? {
        guard let schemeEnd = url.range(of: "://") else { return nil }
        let authority = url[schemeEnd.upperBound...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard authority.allSatisfy({ !$0.isWhitespace }),
            let (host, port) = split(authority: authority, colon: ":", at: "@", brackets: ("[", "]"), number: { Int($0) })
        else { return nil }
        return Destination(
            scheme: url[..<schemeEnd.lowerBound].lowercased(), host: host.lowercased(), port: port,
            pathAndQuery: String(url[authority.endIndex...].prefix { $0 != "#" }))
    }

    /// An authority (`host`, `host:port`, `[v6]`, `[v6]:port`) as its host, without brackets, and its
    /// port (1–65535); nil when empty, malformed, or carrying user info. Shared by both scans, which
    /// differ only in what a character is.
    private static func split<Text: BidirectionalCollection>(
        authority: Text, colon: Text.Element, at: Text.Element, brackets: (open: Text.Element, close: Text.Element),
        number: (Text) -> Int?
    ) -> (host: Text, port: Int?)? where Text.SubSequence == Text, Text.Element: Equatable {
        guard !authority.isEmpty, !authority.contains(at) else { return nil }
        var host = authority
        var portText: Text?
        if authority.first == brackets.open {
            guard let close = authority.firstIndex(of: brackets.close) else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.first == colon else { return nil }
                portText = after.dropFirst()
            }
        } else if let index = authority.lastIndex(of: colon) {
            host = authority[..<index]
            portText = authority[authority.index(after: index)...]
        }
        var port: Int?
        if let portText {
            guard let value = number(portText), (1...65_535).contains(value) else { return nil }
            port = value
        }
        return host.isEmpty ? nil : (host, port)
    }

    public func isAllowListed(_ destination: Destination) -> Bool {
        allowedHosts.contains(destination.host)
            || destination.port.map { allowedHosts.contains("\(destination.host):\($0)") } ?? false
    }

    /// The checks that need no DNS: syntax, https, and an IP-literal host's address.
    public func check(url: String) -> Refusal? { check(Self.parse(url)) }

    /// `check(url:)` on a parsed URL (nil: one that did not parse).
    public func check(_ destination: Destination?) -> Refusal? {
        guard let destination, ["http", "https"].contains(destination.scheme) else { return .invalid }
        // One trailing dot names the same host (`localhost.`, `169.254.169.254.`).
        let host = destination.host.hasSuffix(".") ? String(destination.host.dropLast()) : destination.host
        guard Self.isCanonicalHost(host) else { return .invalid }
        if isAllowListed(destination) { return nil }
        guard destination.scheme == "https" else { return .notHTTPS }
        if let address = IPAddress(host) { return address.isPublic ? nil : .privateAddress }
        // Single-label names resolve through search domains and hosts files; the suffixes are reserved
        // for local use (RFC 6761, RFC 6762, RFC 8375, ICANN's .internal).
        let local = ["localhost", "local", "internal", "localdomain", "home.arpa"]
        if !host.contains(".") || local.contains(where: { host == $0 || host.hasSuffix("." + $0) }) { return .privateAddress }
        return nil
    }

    /// An IP literal in the form the resolver prints, or an ASCII DNS name of letters, digits and
    /// hyphens. Refused: numeric hosts in other forms (`2130706433`, `0x7f000001`, `0177.0.0.1`,
    /// `127.1`: 127.0.0.1 to many URL parsers), percent-escapes, zone ids and non-ASCII names, which
    /// a client may resolve differently than this check reads them.
    static func isCanonicalHost(_ host: String) -> Bool {
        if IPAddress(host) != nil { return true }
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        guard host.utf8.count <= 253, let last = labels.last else { return false }
        for label in labels {
            guard (1...63).contains(label.utf8.count), label.first != "-", label.last != "-",
                label.utf8.allSatisfy({ (97...122).contains($0) || (48...57).contains($0) || $0 == 45 })
            else { return false }
        }
        let isNumber = last.allSatisfy(\.isNumber) || (last.hasPrefix("0x") && last.dropFirst(2).allSatisfy(\.isHexDigit))
        return !isNumber
    }

    /// The check after resolving the host: every address must be public (one private answer is enough
    /// to refuse, since the client may connect to any of them).
    public func check(url: String, resolved addresses: [IPAddress]) -> Refusal? {
        check(Self.parse(url), resolved: addresses)
    }

    /// `check(url:resolved:)` on a parsed URL.
    public func check(_ destination: Destination?, resolved addresses: [IPAddress]) -> Refusal? {
        if let refusal = check(destination) { return refusal }
        guard let destination, !isAllowListed(destination) else { return nil }
        guard !addresses.isEmpty else { return .unresolvable }
        return addresses.allSatisfy(\.isPublic) ? nil : .privateAddress
    }
}

/// An IPv4 or IPv6 address as bytes (4 or 16), classified by the IANA special-purpose registries.
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// Parses dotted-quad IPv4 or textual IPv6 (`inet_pton`, so exactly the forms the resolver prints).
    public init?(_ text: String) {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            self.bytes = withUnsafeBytes(of: &v4) { Array($0) }
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            self.bytes = withUnsafeBytes(of: &v6) { Array($0) }
            return
        }
        return nil
    }

    public var description: String {
        if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
        return stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            .joined(separator: ":")
    }

    /// False for loopback, private (RFC 1918, unique local), shared (CGNAT), link-local, unspecified,
    /// multicast, benchmarking, documentation and reserved ranges, and for IPv6 forms that embed an IPv4
    /// address, which are classified by it: compatible (`::a.b.c.d`), mapped, translated, NAT64, 6to4
    /// and Teredo (its server and its client). A router or translator on the way may turn such an
    /// address into the IPv4 one it embeds.
    public var isPublic: Bool {
        if bytes.count == 4 { return Self.isPublicV4(bytes) }
        let b = bytes
        let v4 = Array(b[12..<16])
        let zeros = { (range: Range<Int>) in b[range].allSatisfy { $0 == 0 } }
        // ::a.b.c.d (compatible; :: and ::1 included) and ::ffff:a.b.c.d (mapped)
        if zeros(0..<10) && (zeros(10..<12) || (b[10] == 0xFF && b[11] == 0xFF)) { return Self.isPublicV4(v4) }
        // ::ffff:0:a.b.c.d (translated)
        if zeros(0..<8) && b[8] == 0xFF && b[9] == 0xFF && zeros(10..<12) { return Self.isPublicV4(v4) }
        if b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xFF && b[3] == 0x9B {
            if zeros(4..<12) { return Self.isPublicV4(v4) }  // 64:ff9b::/96 NAT64
            if b[4] == 0 && b[5] == 1 { return false }  // 64:ff9b:1::/48 local-use NAT64 (RFC 8215)
        }
        if b[0] == 0x20 && b[1] == 0x02 { return Self.isPublicV4(Array(b[2..<6])) }  // 2002::/16 6to4
        if b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 {
            // 2001::/32 Teredo: its server, and its client (stored inverted)
            if b[3] == 0 { return Self.isPublicV4(Array(b[4..<8])) && Self.isPublicV4(v4.map { ~$0 }) }
            if b[3] == 0x02 && zeros(4..<6) { return false }  // 2001:2::/48 benchmarking
            if b[3] & 0xF0 == 0x10 || b[3] & 0xF0 == 0x20 { return false }  // 2001:10::/28, 2001:20::/28 ORCHID
        }
        if b[0] == 0x3F && b[1] == 0xFF && b[2] & 0xF0 == 0 { return false }  // 3fff::/20 documentation
        if b[0] == 0x5F && b[1] == 0x00 { return false }  // 5f00::/16 segment routing SIDs
        if b[0] & 0xFE == 0xFC { return false }  // fc00::/7 unique local
        if b[0] == 0xFE && b[1] & 0xC0 == 0x80 { return false }  // fe80::/10 link-local
        if b[0] == 0xFE && b[1] & 0xC0 == 0xC0 { return false }  // fec0::/10 site-local (deprecated)
        if b[0] == 0xFF { return false }  // multicast
        if b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0D && b[3] == 0xB8 { return false }  // 2001:db8::/32 documentation
        if b[0] == 0x01 && b[1..<8].allSatisfy({ $0 == 0 }) { return false }  // 100::/64 discard
        return true
    }

    static func isPublicV4(_ b: [UInt8]) -> Bool {
        switch (b[0], b[1], b[2]) {
        case (0, _, _), (10, _, _), (127, _, _): return false
        case (100, 64...127, _): return false  // shared address space (CGNAT)
        case (169, 254, _): return false
        case (172, 16...31, _): return false
        case (192, 0, 0), (192, 0, 2), (192, 168, _): return false
        case (198, 18...19, _), (198, 51, 100), (203, 0, 113): return false
        case (224...255, _, _): return false  // multicast, reserved, broadcast
        default: return true
        }
    }
}

/// The advertiser's copy of winning postbacks (`AttributionCopyEndpoint`, spec section 6): sent to the
/// endpoint's domain at a fixed well-known path. Subdomains are ignored: the copy goes to the host's
/// registrable domain by the Public Suffix List (`ads.example.co.uk` → `example.co.uk`, while
/// `x.github.io` stays itself: `github.io` is a public suffix); a path in the endpoint is ignored too.
/// IP literals and ports are kept (tests, demos).
public enum CopyEndpoint {
    public static let path = "/.well-known/appattribution/report-attribution/"

    /// Whether a request path (as a receiver records it: perhaps under a prefix, perhaps with a query)
    /// is a copy's.
    public static func isCopy(path: String?) -> Bool {
        guard let path else { return false }
        let bare = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? path
        return bare.hasSuffix(Self.path) || bare.hasSuffix(String(Self.path.dropLast()))
    }

    /// The URL copies go to, or nil when the endpoint is not an http(s) URL whose host is an IP literal
    /// or has a registrable domain (a public suffix such as `github.io` alone has none).
    public static func reportURL(for endpoint: String, suffixes: PublicSuffixList) -> String? {
        guard let destination = DestinationPolicy.parse(endpoint), ["http", "https"].contains(destination.scheme) else {
            return nil
        }
        var host = destination.host
        if IPAddress(host) == nil {
            guard let domain = suffixes.registrableDomain(of: host) else { return nil }
            host = domain
        } else if host.contains(":") {
            host = "[\(host)]"
        }
        return "\(destination.scheme)://\(host)\(destination.port.map { ":\($0)" } ?? "")\(path)"
    }

    /// Whether a winning postback of this conversion type gets a copy: re-engagement copies need the
    /// app's `EligibleForAdAttributionKitReengagementPostbackCopies`.
    public static func applies(to app: AdvertisedAppConfiguration, conversionType: ConversionType, didWin: Bool) -> Bool {
        guard didWin, app.attributionCopyEndpoint != nil else { return false }
        return conversionType != .reengagement || app.eligibleForReengagementPostbackCopies == true
    }
}
