import Foundation
import PipelineCatalog
import RedisStreams
import TestSupport
import Testing

extension PipelineSuites.HostileInputTests {
    /// One request as raw bytes, for what an HTTP client will not send, and the answers it may get:
    /// statuses (0: none, the connection closed or stayed silent) and, for a route's answer, its reason.
    struct RawCase {
        let name: String
        let bytes: [UInt8]
        var admin = false
        let statuses: Set<Int>
        var reason: String? = nil
    }

    /// A status line, headers and the body as far as its Content-Length, from what a server sent.
    struct RawAnswer {
        let status: Int
        let contentType: String?
        let body: String

        init?(_ text: String) {
            guard let headEnd = text.range(of: "\r\n\r\n") else { return nil }
            let lines = text[..<headEnd.lowerBound].split(separator: "\r\n", omittingEmptySubsequences: false)
            let statusLine = lines.first?.split(separator: " ") ?? []
            guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."), let status = Int(statusLine[1]) else { return nil }
            var headers: [String: String] = [:]
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            let rest = String(text[headEnd.upperBound...])
            let length = headers["content-length"].flatMap(Int.init) ?? 0
            guard rest.utf8.count >= length else { return nil }
            self.status = status
            self.contentType = headers["content-type"]
            self.body = String(decoding: Array(rest.utf8.prefix(length)), as: UTF8.self)
        }

        var reason: String? {
            (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])?["reason"] as? String
        }
    }

    /// `method path` as an HTTP/1.1 request to ingest, Content-Length from `body` unless `length` is false.
    static func request(
        _ method: String, _ path: String, _ body: [UInt8]? = Array("{}".utf8), headers: [(String, String)] = [],
        length: Bool = true
    ) -> [UInt8] {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: ingest\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if length, let body { head += "Content-Length: \(body.count)\r\n" }
        return Array((head + "\r\n").utf8) + (body ?? [])
    }

    /// Header floods, malformed HTTP, bodies at and past each route's limit, odd methods, paths and
    /// JSON: each is refused (or, where the parser gives up, the connection closed) without a 5xx, a
    /// route's refusal is problem JSON with its reason, nothing reaches the pipeline, and the services
    /// answer afterwards. Requests pipelined in one write are answered in turn up to the broken one.
    @Test func rawRequestsAreRefusedWithoutHarm() async throws {
        let redis = try await RedisServer.start()
        defer { redis.stop() }
        let pipeline = try PipelineProcesses(redis: redis, timeScale: 1, only: ["ingest", "admin"])
        defer { pipeline.stop() }
        #expect(try await http.waitUntilUp("\(pipeline.ingestURL)/health"), "ingest starts\n\(pipeline.logs())")
        #expect(try await http.waitUntilUp("\(pipeline.adminURL)/health"), "admin starts\n\(pipeline.logs())")
        let admin = pipeline.adminToken
        let app = 91_004
        let created = try await http.send("PUT", "\(pipeline.adminURL)/v1/admin/advertised-apps/\(app)", json: [:], token: admin)
        #expect(created.status == 200)
        let keyReply = try await http.send("POST", "\(pipeline.adminURL)/v1/admin/advertised-apps/\(app)/keys", token: admin)
        let appKey = try #require(keyReply.json["app-key"] as? String)
        let otherApp = app + 1
        _ = try await http.send("PUT", "\(pipeline.adminURL)/v1/admin/advertised-apps/\(otherApp)", json: [:], token: admin)
        let otherKeyReply = try await http.send(
            "POST", "\(pipeline.adminURL)/v1/admin/advertised-apps/\(otherApp)/keys", token: admin)
        let otherAppKey = try #require(otherKeyReply.json["app-key"] as? String)

        var cases: [RawCase] = []
        cases += Self.headerFloods()
        cases += Self.malformedRequests(admin: admin, app: app)
        cases += Self.bodiesPastTheLimit(admin: admin, appKey: appKey, app: app)
        cases += Self.credentialCases(admin: admin, appKey: appKey, otherAppKey: otherAppKey, app: app)

        let ports = (
            ingest: try #require(URL(string: pipeline.ingestURL)?.port),
            admin: try #require(URL(string: pipeline.adminURL)?.port)
        )
        for c in cases {
            let socket = try #require(RawSocket(port: c.admin ? ports.admin : ports.ingest), "\(c.name): connects")
            socket.transmit(bytes: c.bytes)
            // Long enough for a loaded machine to answer; short where silence is the expected answer.
            let received = socket.read(timeout: c.statuses.contains(0) ? .seconds(3) : .seconds(15)) { RawAnswer($0) != nil }
            let answer = RawAnswer(received.text)
            let status = answer?.status ?? 0
            let detail = "\(c.name): \(received.text.prefix(300).debugDescription)"
            #expect(c.statuses.contains(status), "\(detail)")
            if let reason = c.reason {
                #expect(answer?.contentType == "application/problem+json", "\(detail)")
                #expect(answer?.reason == reason, "\(detail)")
            }
        }

        // Two valid requests and a broken one in one write: the first two are answered.
        let pipelined = try #require(RawSocket(port: ports.ingest))
        pipelined.transmit("GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\nGARBAGE\r\n\r\n")
        let answers = pipelined.read(timeout: .seconds(15)) { $0.components(separatedBy: "HTTP/1.1 ").count > 3 }.text
        let statuses = answers.components(separatedBy: "HTTP/1.1 ").dropFirst().map { $0.prefix(3) }
        #expect(statuses.prefix(2) == ["200", "200"], "\(answers.prefix(500).debugDescription)")

        #expect(try await http.send("GET", "\(pipeline.ingestURL)/health").status == 200, "ingest answers afterwards")
        #expect(try await http.send("GET", "\(pipeline.adminURL)/health").status == 200, "admin answers afterwards")
        #expect(try await streamLength(StreamNames.events, on: redis.connect()) == 0, "nothing entered the pipeline")
    }

    /// Header sections no server should take: thousands of headers, megabyte values, a 100 KB URL, NUL,
    /// spaces and line folding where they are not allowed.
    static func headerFloods() -> [RawCase] {
        let json = ("Content-Type", "application/json")
        // NIO's parser refuses each with a bare 400 (no route ran, so no problem JSON). One larger than
        // the socket's buffers may be cut off mid-send, its answer lost with the connection: none then.
        let refused: Set<Int> = [400]
        let cutOff: Set<Int> = [0, 400]
        return [
            RawCase(
                name: "5,000 small headers",
                bytes: request("POST", "/v1/impressions", headers: [json] + (0..<5_000).map { ("X-Flood-\($0)", "v") }),
                statuses: cutOff),
            RawCase(
                name: "one 100 KB header",
                bytes: request("POST", "/v1/impressions", headers: [json, ("X-Huge", String(repeating: "a", count: 100_000))]),
                statuses: cutOff),
            RawCase(
                name: "one 1 MB header",
                bytes: request("POST", "/v1/impressions", headers: [json, ("X-Huge", String(repeating: "a", count: 1_000_000))]),
                statuses: cutOff),
            RawCase(
                name: "100 KB Authorization",
                bytes: request(
                    "POST", "/v1/impressions",
                    headers: [json, ("Authorization", "Bearer " + String(repeating: "a", count: 100_000))]),
                statuses: cutOff),
            RawCase(
                name: "1,000 Authorization headers",
                bytes: request(
                    "POST", "/v1/conversions", headers: Array(repeating: ("Authorization", "Bearer x"), count: 1_000)),
                statuses: cutOff),
            RawCase(
                name: "100 KB Idempotency-Key",
                bytes: request(
                    "POST", "/v1/impressions", headers: [json, ("Idempotency-Key", String(repeating: "k", count: 100_000))]),
                statuses: cutOff),
            RawCase(
                name: "8 KB Content-Type",
                bytes: request(
                    "POST", "/v1/impressions",
                    headers: [("Content-Type", "application/json;" + String(repeating: "x", count: 8_000))]),
                statuses: refused, reason: "invalid-json"),
            RawCase(
                name: "100 KB URL",
                bytes: request("POST", "/v1/impressions?" + String(repeating: "q", count: 100_000), headers: [json]),
                statuses: cutOff),
            RawCase(
                name: "header value with NUL", bytes: request("POST", "/v1/impressions", headers: [json, ("X-Nul", "a\u{0}b")]),
                statuses: refused),
            RawCase(
                name: "header name with space", bytes: request("POST", "/v1/impressions", headers: [json, ("X Bad", "v")]),
                statuses: refused),
            RawCase(
                name: "obsolete line folding",
                bytes: request("POST", "/v1/impressions", headers: [json, ("X-Fold", "a\r\n folded")]),
                statuses: refused),
        ]
    }

    /// Bytes that are not valid HTTP, or valid HTTP no route expects.
    static func malformedRequests(admin: String, app: Int) -> [RawCase] {
        let json = ("Content-Type", "application/json")
        let adminGet = { (path: [UInt8]) in
            Array("GET ".utf8) + path + Array(" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(admin)\r\n\r\n".utf8)
        }
        let text = { (name: String, raw: String, statuses: Set<Int>) in
            RawCase(name: name, bytes: Array(raw.utf8), statuses: statuses)
        }
        let impression = { (name: String, body: String, statuses: Set<Int>, reason: String?) in
            RawCase(
                name: name, bytes: request("POST", "/v1/impressions", Array(body.utf8), headers: [json]), statuses: statuses,
                reason: reason)
        }
        let plist = [("Content-Type", "application/x-plist"), ("Authorization", "Bearer \(admin)")]
        let bomb =
            #"<?xml version="1.0"?><!DOCTYPE p [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;"><!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;"><!ENTITY f "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;"><!ENTITY g "&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;">]><plist version="1.0"><dict><key>CFBundleName</key><string>&g;</string></dict></plist>"#
        let external =
            #"<?xml version="1.0"?><!DOCTYPE p [<!ENTITY x SYSTEM "file:///etc/passwd">]><plist version="1.0"><dict><key>AttributionCopyEndpoint</key><string>&x;</string></dict></plist>"#
        let clientHello: [UInt8] =
            [0x16, 0x03, 0x01, 0x00, 0x2a, 0x01, 0x00, 0x00, 0x26, 0x03, 0x03]
            + (0..<32).map { UInt8($0) } + [0x00, 0x00, 0x02, 0x13, 0x01, 0x01, 0x00]
        let click = #""interaction":{"type":"click","time":1,"loaded-at":1}"#
        // NIO's parser refuses these with a bare 400: no route ran, so no problem JSON.
        let parser: Set<Int> = [400]
        return [
            RawCase(name: "garbage", bytes: [0, 1, 2] + Array("garbage\r\n\r\n".utf8), statuses: parser),
            RawCase(name: "TLS ClientHello on the plain port", bytes: clientHello, statuses: parser),
            text("HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", parser),
            text("HTTP/9.9", "GET /health HTTP/9.9\r\nHost: x\r\n\r\n", parser),
            text("no HTTP version", "GET /health\r\n\r\n", parser),
            text("bare LF line endings", "GET /health HTTP/1.1\nHost: x\n\n", parser),
            text("lower-case method", "get /health HTTP/1.1\r\nHost: x\r\n\r\n", parser),
            text("unknown method", "BREW /v1/impressions HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", parser),
            RawCase(
                name: "4 KB method",
                bytes: Array(String(repeating: "A", count: 4_096).utf8) + Array(" / HTTP/1.1\r\nHost: x\r\n\r\n".utf8),
                statuses: parser),
            // RFC 9112 asks for a 400 here; NIO's parser takes both, and no route reads Host.
            text("no Host header", "GET /health HTTP/1.1\r\n\r\n", [200, 400]),
            text("two Hosts", "GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", [200, 400]),
            text("negative Content-Length", "POST /v1/impressions HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n{}", parser),
            text(
                "non-numeric Content-Length", "POST /v1/impressions HTTP/1.1\r\nHost: x\r\nContent-Length: ten\r\n\r\n{}", parser),
            text(
                "two different Content-Lengths",
                "POST /v1/impressions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 40\r\n\r\n{}", parser),
            text(
                "Content-Length and chunked (smuggling)",
                "POST /v1/impressions HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /v1/admin/dead-letters HTTP/1.1\r\nHost: x\r\n\r\n",
                parser),
            // A broken body after valid headers reaches ingest's body reader, which answers for itself.
            RawCase(
                name: "chunk size overflow",
                bytes: Array(
                    "POST /v1/impressions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffffff\r\n{}\r\n0\r\n\r\n"
                        .utf8),
                statuses: [400], reason: "invalid-body"),
            RawCase(
                name: "chunk size not hex",
                bytes: Array(
                    "POST /v1/impressions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n".utf8),
                statuses: [400], reason: "invalid-body"),
            RawCase(
                name: "unknown transfer coding",
                bytes: Array("POST /v1/impressions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n{}".utf8),
                statuses: [400], reason: "invalid-body"),
            text("CR inside the request line", "GET /hea\rlth HTTP/1.1\r\nHost: x\r\n\r\n", parser),
            text("space in the path", "GET /v1/admin/ad-networks/a b HTTP/1.1\r\nHost: x\r\n\r\n", parser),
            // Servers must take the absolute form (RFC 9112); its authority names no other host here.
            text("absolute-form URI", "GET http://evil.example/health HTTP/1.1\r\nHost: x\r\n\r\n", [200]),
            RawCase(
                name: "path traversal", bytes: Array("GET /../../../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n".utf8),
                statuses: [404], reason: "not-found"),
            RawCase(
                name: "encoded traversal", bytes: adminGet(Array("/v1/admin/ad-networks/..%2f..%2fopenapi.json".utf8)),
                admin: true,
                statuses: [400], reason: "invalid-ad-network-identifier"),
            RawCase(
                name: "percent-encoded NUL", bytes: adminGet(Array("/v1/admin/ad-networks/a%00b".utf8)), admin: true,
                statuses: [400], reason: "invalid-ad-network-identifier"),
            RawCase(
                name: "invalid percent-encoding", bytes: adminGet(Array("/v1/admin/ad-networks/%zz".utf8)), admin: true,
                statuses: [400], reason: "invalid-ad-network-identifier"),
            RawCase(
                name: "UTF-8 overlong in path", bytes: adminGet(Array("/v1/admin/advertised-apps/%c0%ae%c0%ae".utf8)),
                admin: true,
                statuses: [400], reason: "invalid-item-identifier"),
            RawCase(
                name: "raw bytes above 0x7F in path", bytes: adminGet(Array("/v1/admin/ad-networks/".utf8) + [0xFF, 0xFE]),
                admin: true,
                statuses: parser),
            RawCase(
                name: "item id beyond UInt64",
                bytes: adminGet(Array("/v1/admin/advertised-apps/99999999999999999999999/rejections".utf8)), admin: true,
                statuses: [400], reason: "invalid-item-identifier"),
            // The authority form matches no route; Hummingbird answers it before the router's problem JSON.
            text("CONNECT", "CONNECT 169.254.169.254:80 HTTP/1.1\r\nHost: 169.254.169.254:80\r\n\r\n", [404]),
            RawCase(
                name: "TRACE", bytes: Array("TRACE / HTTP/1.1\r\nHost: x\r\n\r\n".utf8), statuses: [404], reason: "not-found"),
            RawCase(
                name: "OPTIONS *", bytes: Array("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n".utf8), statuses: [404],
                reason: "not-found"),
            RawCase(
                name: "DELETE on an event route", bytes: Array("DELETE /v1/impressions HTTP/1.1\r\nHost: x\r\n\r\n".utf8),
                statuses: [405], reason: "method-not-allowed"),
            RawCase(
                name: "X-HTTP-Method-Override",
                bytes: request("POST", "/v1/impressions", headers: [json, ("X-HTTP-Method-Override", "DELETE")]), statuses: [400],
                reason: "invalid-json"),
            // Nothing to answer until the body deadline (HTTP_BODY_TIMEOUT_MS) or the idle timeout passes.
            text(
                "Expect: 100-continue, then nothing",
                "POST /v1/impressions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 100000\r\n\r\n", [0, 408]),
            RawCase(
                name: "HTTP/1.0 without Content-Length", bytes: Array("POST /v1/impressions HTTP/1.0\r\n\r\n{}".utf8),
                statuses: [400],
                reason: "invalid-json"),
            text("request line only", "POST /v1/impressions HTTP/1.1\r\n", [0]),
            RawCase(
                name: "JSON with a BOM",
                bytes: request("POST", "/v1/impressions", [0xEF, 0xBB, 0xBF] + Array("{}".utf8), headers: [json]),
                statuses: [400], reason: "invalid-json"),
            impression(
                "JSON object nested 10,000 deep",
                String(repeating: #"{"a":"#, count: 10_000) + "1" + String(repeating: "}", count: 10_000), [400], "invalid-json"),
            impression(
                "JSON array nested 30,000 deep", String(repeating: "[", count: 30_000) + String(repeating: "]", count: 30_000),
                [400],
                "invalid-json"),
            RawCase(
                name: "invalid UTF-8 in JSON",
                bytes: request(
                    "POST", "/v1/impressions",
                    Array(#"{"device-identifier":""#.utf8) + [0xFF, 0xFE] + Array(#"","impression":"a.b.c",\#(click)}"#.utf8),
                    headers: [json]), statuses: [400], reason: "invalid-json"),
            impression(
                "lone surrogate escape", #"{"device-identifier":"\ud800","impression":"a.b.c",\#(click)}"#, [400], "invalid-json"),
            impression(
                "number 1e400",
                #"{"device-identifier":"d","impression":"a.b.c","interaction":{"type":"click","time":1e400,"loaded-at":1}}"#,
                [400], "invalid-json"),
            impression(
                "time beyond Int64",
                #"{"device-identifier":"d","impression":"a.b.c","interaction":{"type":"click","time":99999999999999999999,"loaded-at":1}}"#,
                [400], "invalid-json"),
            // The last of two equal keys is read (RFC 8259 leaves it open); its body is then judged as usual.
            impression(
                "duplicate keys", #"{"device-identifier":"d","device-identifier":"e","impression":"a.b.c",\#(click)}"#, [400],
                "invalid-time"),
            impression(
                "Int64.min times",
                #"{"device-identifier":"d","impression":"a.b.c","interaction":{"type":"view","time":-9223372036854775808,"begin":9223372036854775807}}"#,
                [400], "invalid-time"),
            RawCase(
                name: "XML entity bomb as Info.plist",
                bytes: request("PUT", "/v1/admin/advertised-apps/\(app)", Array(bomb.utf8), headers: plist), admin: true,
                statuses: [400], reason: "invalid-property-list"),
            RawCase(
                name: "XML external entity as Info.plist",
                bytes: request("PUT", "/v1/admin/advertised-apps/\(app)", Array(external.utf8), headers: plist), admin: true,
                statuses: [400], reason: "invalid-property-list"),
            RawCase(
                name: "binary plist header",
                bytes: request(
                    "PUT", "/v1/admin/advertised-apps/\(app)", Array("bplist00".utf8) + (0..<200).map { UInt8($0) },
                    headers: plist),
                admin: true, statuses: [400], reason: "invalid-property-list"),
        ]
    }

    /// Each route's body limit (65,536 bytes for events, 16,384 for ad networks, 262,144 for advertised
    /// apps and schemas) crossed with Content-Length and chunked, a terabyte declared, and the limit itself.
    static func bodiesPastTheLimit(admin: String, appKey: String, app: Int) -> [RawCase] {
        let json = ("Content-Type", "application/json")
        let withAppKey = [json, ("Authorization", "Bearer \(appKey)")]
        let withToken = [json, ("Authorization", "Bearer \(admin)")]
        let routes: [(String, String, Int, [(String, String)])] = [
            ("POST", "/v1/impressions", 65_536, [json]),
            ("POST", "/v1/conversions", 65_536, withAppKey),
            ("POST", "/v1/conversion-value-updates", 65_536, withAppKey),
            ("POST", "/v1/activity", 65_536, withAppKey),
            ("POST", "/v1/conversion-values/evaluate", 65_536, withAppKey),
            ("PUT", "/v1/admin/ad-networks/oversized.net", 16_384, withToken),
            ("PUT", "/v1/admin/publisher-apps/91001", 65_536, withToken),
            ("PUT", "/v1/admin/advertised-apps/\(app)", 262_144, withToken),
            ("PUT", "/v1/admin/advertised-apps/\(app)/conversion-value-schema", 262_144, withToken),
        ]
        var cases: [RawCase] = []
        for (method, path, limit, headers) in routes {
            let isAdmin = path.hasPrefix("/v1/admin/")
            let body = Array(("{" + String(repeating: " ", count: limit) + "}").utf8)
            cases.append(
                RawCase(
                    name: "\(method) \(path): \(body.count) bytes", bytes: request(method, path, body, headers: headers),
                    admin: isAdmin, statuses: [413], reason: "body-too-large"))
            let chunk = Array(("{" + String(repeating: " ", count: limit + 10) + "}").utf8)
            let chunked =
                request(method, path, nil, headers: headers + [("Transfer-Encoding", "chunked")], length: false)
                + Array("\(String(chunk.count, radix: 16))\r\n".utf8) + chunk + Array("\r\n0\r\n\r\n".utf8)
            cases.append(
                RawCase(
                    name: "\(method) \(path): \(chunk.count) bytes chunked", bytes: chunked, admin: isAdmin, statuses: [413],
                    reason: "body-too-large"))
        }
        let declared =
            request("POST", "/v1/impressions", nil, headers: [json, ("Content-Length", "1000000000000")], length: false)
            + Array(("{" + String(repeating: " ", count: 70_000)).utf8)
        cases.append(RawCase(name: "a terabyte declared, 70 KB sent", bytes: declared, statuses: [413], reason: "body-too-large"))
        cases.append(
            RawCase(
                name: "exactly 65,536 bytes",
                bytes: request(
                    "POST", "/v1/impressions", Array(("{" + String(repeating: " ", count: 65_534) + "}").utf8), headers: [json]),
                statuses: [400], reason: "invalid-json"))
        cases.append(
            RawCase(
                name: "a gzip label on bytes that are not JSON",
                bytes: request(
                    "POST", "/v1/impressions", [0x1F, 0x8B, 0x08, 0x00] + Array(repeating: 0, count: 100),
                    headers: [json, ("Content-Encoding", "gzip")]), statuses: [400], reason: "invalid-json"))
        return cases
    }
}
