import Testing

@testable import AttributionModel

@Suite("Postback destinations: https and public addresses only, unless allow-listed")
struct DestinationPolicyTests {
    @Test(
        "address classification",
        arguments: [
            ("8.8.8.8", true), ("1.1.1.1", true), ("100.63.255.255", true), ("100.128.0.1", true),
            ("172.15.0.1", true), ("172.32.0.1", true), ("192.169.0.1", true), ("2606:4700::1111", true),
            ("0.0.0.0", false), ("10.1.2.3", false), ("127.0.0.1", false), ("127.255.255.254", false),
            ("100.64.0.1", false), ("169.254.169.254", false), ("172.16.0.1", false), ("172.31.255.255", false),
            ("192.168.1.1", false), ("192.0.0.8", false), ("192.0.2.1", false), ("198.18.0.1", false),
            ("198.51.100.7", false), ("203.0.113.9", false), ("224.0.0.1", false), ("255.255.255.255", false),
            ("::", false), ("::1", false), ("fc00::1", false), ("fd12:3456::1", false), ("fe80::1", false),
            ("ff02::1", false), ("2001:db8::1", false), ("::ffff:127.0.0.1", false), ("::ffff:8.8.8.8", true),
            ("64:ff9b::10.0.0.1", false), ("64:ff9b::8.8.8.8", true),
            // IPv6 forms embedding IPv4 (a way around a check of IPv6 ranges alone): classified by the IPv4 address inside.
            ("::127.0.0.1", false), ("::a9fe:a9fe", false), ("::8.8.8.8", true), ("64:ff9b:1::7f00:1", false),
            ("64:ff9b:1::808:808", false), ("2002:7f00:1::1", false), ("2002:a9fe:a9fe::1", false),
            ("2002:808:808::1", true), ("::ffff:0:127.0.0.1", false), ("::ffff:0:8.8.8.8", true),
            ("2001:0:4136:e378:8000:63bf:80ff:fffe", false),  // Teredo, client 127.0.0.1
            ("2001:0:4136:e378:8000:63bf:f7f7:f7f7", true),  // Teredo, client 8.8.8.8, server 65.54.227.120
            ("2001:0:a00:1:8000:63bf:f7f7:f7f7", false),  // Teredo via server 10.0.0.1
            ("2001:2::1", false), ("2001:10::1", false), ("2001:20::1", false), ("3fff::1", false),
            ("5f00::1", false), ("2001:4860:4860::8888", true), ("2001:200::1", true),
        ] as [(String, Bool)])
    func classifies(_ text: String, _ isPublic: Bool) throws {
        let address = try #require(IPAddress(text), "\(text) parses")
        #expect(address.isPublic == isPublic, "\(text)")
    }

    static let policy = DestinationPolicy(allowList: "127.0.0.1, receiver:8080 ,")

    @Test(
        "URL checks before resolving",
        arguments: [
            ("https://postbacks.example.com/v1", nil),
            ("https://postbacks.example.com:8443/v1?x=1", nil),
            ("http://postbacks.example.com/v1", DestinationPolicy.Refusal.notHTTPS),
            ("ftp://postbacks.example.com/", .invalid),
            ("postbacks.example.com/v1", .invalid),
            ("https:///path", .invalid),
            ("https://user@postbacks.example.com/", .invalid),
            ("https://postbacks.example.com:0/", .invalid),
            ("https://postbacks.example.com:99999/", .invalid),
            ("https://10.0.0.5/postbacks", .privateAddress),
            ("https://[::1]:8443/postbacks", .privateAddress),
            ("https://[fd00::5]/", .privateAddress),
            ("https://[::127.0.0.1]/", .privateAddress),
            ("https://[::a9fe:a9fe]/", .privateAddress),
            ("https://[64:ff9b:1::7f00:1]/", .privateAddress),
            ("https://[2002:7f00:1::1]/", .privateAddress),
            ("https://LOCALHOST/", .privateAddress),
            ("https://api.localhost/", .privateAddress),
            ("http://127.0.0.1:9999/postbacks", nil),  // allow-listed host: any port, http allowed
            ("http://receiver:8080/postbacks", nil),  // allow-listed host:port
            ("http://receiver:8081/postbacks", .notHTTPS),
            // Found by the hostile-input run: other spellings of private hosts, and hosts that may
            // resolve differently than they read.
            ("https://2130706433/", .invalid),
            ("https://0x7f000001/", .invalid),
            ("https://0177.0.0.1/", .invalid),
            ("https://127.1/", .invalid),
            ("https://169.254.169.254./", .privateAddress),
            ("https://localhost./", .privateAddress),
            ("https://[fe80::1%25eth0]/", .invalid),
            ("https://%31%32%37.0.0.1/", .invalid),
            ("https://exa\u{0}mple.com/", .invalid),
            ("https://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ/", .invalid),
            ("https://-bad.example.com/", .invalid),
            ("https://vm/", .privateAddress),
            ("https://localhost.localdomain/", .privateAddress),
            ("https://metadata.google.internal/", .privateAddress),
            ("https://printer.local/", .privateAddress),
            ("https://router.home.arpa/", .privateAddress),
            ("https://xn--bcher-kva.example/", nil),
            ("https://postbacks.example.com./v1", nil),
        ] as [(String, DestinationPolicy.Refusal?)])
    func checksURL(_ url: String, _ refusal: DestinationPolicy.Refusal?) {
        #expect(Self.policy.check(url: url) == refusal, "\(url)")
    }

    /// ASCII URLs take a byte scan (`parse(ascii:)`), anything else the character scan (`parse(text:)`);
    /// on ASCII both must read the same parts, including where they refuse.
    @Test(
        "the byte scan reads ASCII URLs as the character scan does",
        arguments: [
            "https://postbacks.example.com/v1", "HTTPS://Postbacks.Example.COM:8443/v1?x=1#f", "http://127.0.0.1:9999/p",
            "https://[::1]:8443/p", "https://[fd00::5]/", "https://[::1]x/", "https://[::1", "https://[]/", "https://:80/",
            "https://host:/", "https://host:+80/", "https://host:-80/", "https://host:0080/", "https://host:65536/",
            "https://a:b:c/", "https:///path", "https://", "://x", "x://y", "postbacks.example.com/v1", "https:/x.com/",
            "https://user@host/", "https://host/@x", "https://ho st/", "https://host\t/", "https://host\r\n/",
            "https://host?q=1", "https://host#frag", "a://b://c", "https://host:8443", "::///", ":///x", "",
        ])
    func byteScanMatchesCharacterScan(_ url: String) {
        #expect(DestinationPolicy.parse(ascii: Array(url.utf8)) == DestinationPolicy.parse(text: url), "\(url)")
        #expect(DestinationPolicy.parse(url) == DestinationPolicy.parse(text: url), "\(url)")
    }

    @Test func resolvedAddressesMustAllBePublic() {
        let url = "https://postbacks.example.com/"
        let publicAddress = IPAddress("93.184.216.34")!
        #expect(Self.policy.check(url: url, resolved: [publicAddress]) == nil)
        #expect(Self.policy.check(url: url, resolved: [publicAddress, IPAddress("10.0.0.1")!]) == .privateAddress)
        #expect(Self.policy.check(url: url, resolved: []) == .unresolvable)
        // An allow-listed host is not resolved against the rules at all.
        #expect(Self.policy.check(url: "http://127.0.0.1:1/", resolved: []) == nil)
    }
}

@Suite("AttributionCopyEndpoint")
struct CopyEndpointTests {
    /// A few rules in the list's own format: a comment, plain rules, a private-section rule, a
    /// wildcard and its exception.
    static let suffixes = PublicSuffixList(
        text: """
            // ===BEGIN ICANN DOMAINS===
            com
            uk
            co.uk
            ck
            *.ck
            !www.ck
            // ===BEGIN PRIVATE DOMAINS===
            github.io
            """)

    @Test(
        "the copy URL: the registrable domain by the Public Suffix List, at the well-known path",
        arguments: [
            ("https://example.com", "https://example.com/.well-known/appattribution/report-attribution/"),
            ("https://ads.example.com", "https://example.com/.well-known/appattribution/report-attribution/"),
            ("https://a.b.example.com/some/path", "https://example.com/.well-known/appattribution/report-attribution/"),
            ("https://shop.example.co.uk", "https://example.co.uk/.well-known/appattribution/report-attribution/"),
            ("https://example.com:8443", "https://example.com:8443/.well-known/appattribution/report-attribution/"),
            ("http://127.0.0.1:9000", "http://127.0.0.1:9000/.well-known/appattribution/report-attribution/"),
            ("https://[2606:4700::1]", "https://[2606:4700::1]/.well-known/appattribution/report-attribution/"),
            // A private-section suffix: each user's site is its own registrable domain.
            ("https://x.github.io", "https://x.github.io/.well-known/appattribution/report-attribution/"),
            ("https://ads.x.github.io", "https://x.github.io/.well-known/appattribution/report-attribution/"),
            ("https://github.io", nil), ("https://co.uk", nil),
            // `*.ck`: every name under ck is a suffix, except `www.ck` (`!www.ck`).
            ("https://a.b.shop.ck", "https://b.shop.ck/.well-known/appattribution/report-attribution/"),
            ("https://shop.ck", nil),
            ("https://x.www.ck", "https://www.ck/.well-known/appattribution/report-attribution/"),
            // Not in the list: the implicit rule `*` (the top-level label is the suffix).
            ("https://ads.example.unlisted", "https://example.unlisted/.well-known/appattribution/report-attribution/"),
            ("example.com", nil), ("https://localhost", nil), ("ftp://example.com", nil),
        ] as [(String, String?)])
    func reportURL(_ endpoint: String, _ expected: String?) {
        #expect(CopyEndpoint.reportURL(for: endpoint, suffixes: Self.suffixes) == expected)
    }

    /// A receiver's recorded path is a copy's at the well-known path, under a prefix or with a query too.
    @Test(
        arguments: [
            ("/.well-known/appattribution/report-attribution/", true),
            ("/partner/.well-known/appattribution/report-attribution/?source=x", true),
            ("/.well-known/appattribution/report-attribution", true),
            ("/postbacks", false), ("/postbacks?report-attribution", false), (nil, false),
        ] as [(String?, Bool)])
    func aRecordedPathIsACopysAtTheWellKnownPath(_ path: String?, _ copy: Bool) {
        #expect(CopyEndpoint.isCopy(path: path) == copy)
    }

    /// The list the services load by default (Debian's `publicsuffix` package): the cases the 10-suffix
    /// heuristic it replaced got wrong.
    @Test func debiansListDecidesRegistrableDomains() throws {
        let text = try String(contentsOfFile: "/usr/share/publicsuffix/public_suffix_list.dat", encoding: .utf8)
        let list = PublicSuffixList(text: text)
        #expect(list.count > 5_000)
        let cases: [(String, String?)] = [
            ("x.github.io", "x.github.io"), ("github.io", nil), ("shop.example.co.uk", "example.co.uk"),
            ("a.b.example.com.au", "example.com.au"), ("ads.example.co.jp", "example.co.jp"),
            ("www.example.com", "example.com"), ("com", nil),
        ]
        for (host, domain) in cases {
            #expect(list.registrableDomain(of: host) == domain, "\(host)")
        }
    }

    @Test func copiesOnlyWinnersAndReengagementsWithTheOptIn() {
        var app = AdvertisedAppConfiguration(itemIdentifier: 1)
        #expect(!CopyEndpoint.applies(to: app, conversionType: .download, didWin: true))
        app.attributionCopyEndpoint = "https://example.com"
        #expect(CopyEndpoint.applies(to: app, conversionType: .download, didWin: true))
        #expect(CopyEndpoint.applies(to: app, conversionType: .redownload, didWin: true))
        #expect(!CopyEndpoint.applies(to: app, conversionType: .download, didWin: false))
        #expect(!CopyEndpoint.applies(to: app, conversionType: .reengagement, didWin: true))
        app.eligibleForReengagementPostbackCopies = true
        #expect(CopyEndpoint.applies(to: app, conversionType: .reengagement, didWin: true))
    }
}
