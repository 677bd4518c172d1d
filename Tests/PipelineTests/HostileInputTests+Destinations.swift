extension PipelineSuites.HostileInputTests {
    /// Postback URLs and copy endpoints aimed at the operator's own network, or not URLs at all, whose
    /// address (or localhost name) is in the URL itself: registration refuses each with its reason, with
    /// no DNS look-up (the dispatcher resolves again before every POST, for names only DNS makes private).
    /// The corpus's pipeline allows 127.0.0.1:9 alone, so loopback on any other port is refused too.
    static func destinationCases(publicKeyPEM: String, admin: String) -> [Case] {
        // A literal private or loopback address (or a localhost name), a scheme other than https, and
        // anything the URL parser reads another way than a browser would (refused as not a URL at all).
        let privateAddress = "destination-private-address"
        let notHTTPS = "destination-not-https"
        let invalidURL = "invalid-postback-url"
        let invalidCopy = "invalid-copy-endpoint"
        let postbackURLs: [(String, String)] = [
            ("https://169.254.169.254/latest/meta-data/", privateAddress),
            ("https://169.254.169.254:443/", privateAddress),
            ("https://10.0.0.1/p", privateAddress),
            ("https://10.255.255.255/p", privateAddress),
            ("https://172.16.0.1/p", privateAddress),
            ("https://192.168.1.1/p", privateAddress),
            ("https://127.0.0.1/p", privateAddress),
            ("https://127.0.0.1:6380/p", privateAddress),
            ("http://127.0.0.1:6380/p", notHTTPS),
            ("https://127.8.9.10/p", privateAddress),
            ("https://0.0.0.0/p", privateAddress),
            ("https://100.64.0.1/p", privateAddress),
            ("https://[::1]/p", privateAddress),
            ("https://[::]/p", privateAddress),
            ("https://[0:0:0:0:0:0:0:1]/p", privateAddress),
            ("https://[fe80::1]/p", privateAddress),
            ("https://[fd00::1]/p", privateAddress),
            ("https://[::ffff:169.254.169.254]/p", privateAddress),
            ("https://[::ffff:7f00:1]/p", privateAddress),
            ("https://[64:ff9b::a9fe:a9fe]/p", privateAddress),
            ("https://localhost/p", privateAddress),
            ("https://LOCALHOST/p", privateAddress),
            ("https://api.localhost/p", privateAddress),
            ("https://localhost:8443/p", privateAddress),
            // Other spellings that inet_aton (and browsers) read as 127.0.0.1 or 169.254.169.254.
            ("https://2130706433/p", invalidURL),
            ("https://0x7f000001/p", invalidURL),
            ("https://0177.0.0.1/p", invalidURL),
            ("https://127.1/p", invalidURL),
            ("https://169.254.169.254./p", privateAddress),
            ("https://localhost./p", privateAddress),
            ("https://[fe80::1%25eth0]/p", invalidURL),
            ("https://%31%32%37.0.0.1/p", invalidURL),
            // Not https, not a URL, or a host hidden behind user information or a fragment.
            ("http://example.com/p", notHTTPS),
            ("HTTP://example.com/p", notHTTPS),
            ("file:///etc/passwd", invalidURL),
            ("gopher://127.0.0.1:6379/_INFO", invalidURL),
            ("https:/example.com/p", invalidURL),
            ("//example.com/p", invalidURL),
            ("https://user@169.254.169.254/p", invalidURL),
            ("https://example.com@127.0.0.1/p", invalidURL),
            ("https://127.0.0.1#@example.com/p", privateAddress),
            ("https://example.com:0/p", invalidURL),
            ("https://example.com:99999/p", invalidURL),
            ("https:// example.com/p", invalidURL),
            ("https://exa\u{0}mple.com/p", invalidURL),
            ("", invalidURL),
            (String(repeating: "x", count: 10_000), invalidURL),
        ]
        let copyEndpoints: [(String, String)] = [
            ("https://169.254.169.254", privateAddress),
            ("https://10.1.2.3", privateAddress),
            ("https://[::1]", privateAddress),
            ("http://example.com", notHTTPS),
            ("https://localhost", invalidCopy),
            ("https://2130706433", invalidCopy),
            ("file:///etc/passwd", invalidCopy),
        ]
        let registrations = postbackURLs.enumerated().map { index, entry in
            let (url, reason) = entry
            return Case(
                name: "postback URL \(url.prefix(60).debugDescription)", method: "PUT",
                path: "/v1/admin/ad-networks/ssrf-\(index).net",
                body: #"{"public-key":\#(jsonString(publicKeyPEM)),"postback-url":\#(jsonString(url))}"#, token: admin,
                expect: .ingest(400, reason))
        }
        let copies = copyEndpoints.map { url, reason in
            Case(
                name: "copy endpoint \(url.debugDescription)", method: "PUT", path: "/v1/admin/advertised-apps/91003",
                body: #"{"AttributionCopyEndpoint":\#(jsonString(url))}"#, token: admin,
                expect: .ingest(400, reason))
        }
        return registrations + copies
    }
}
