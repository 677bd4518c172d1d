import AsyncHTTPClient
import AttributionModel
import Delivery
import DispatcherService
import Foundation
import NIOCore
import ServiceRuntime
import TLSClient
import TestSupport
import Testing

/// The dispatcher's POSTs (`PostbackPoster`) against a real HTTP/1.1 server (Python's, keep-alive):
/// where they connect (the checked address, so a name that answers differently later cannot rebind it), what they reuse, what
/// they never follow, and how they fail.
@Suite("Postback poster")
struct PostbackPosterTests {
    /// A keep-alive server and a poster, both stopped after `body`.
    fileprivate func withServer(_ body: (TestHTTPServer, PostbackPoster) async throws -> Void) async throws {
        let server = try await TestHTTPServer.start()
        defer { server.stop() }
        let poster = try PostbackPoster()
        do {
            try await body(server, poster)
        } catch {
            await poster.shutdown()
            throw error
        }
        await poster.shutdown()
    }

    @Test func aPinnedEndpointConnectsToTheCheckedAddressNotToADNSAnswer() async throws {
        try await withServer { server, poster in
            // `.invalid` never resolves (RFC 6761): only the pin can take the request anywhere.
            let pinned = try server.endpoint("pinned.invalid", address: "127.0.0.1")
            #expect(await server.post(poster, "/postbacks", to: pinned) == .answered(status: 200))
            let unpinned = try server.endpoint("pinned.invalid")
            guard case .failed = await poster.post(ByteBuffer(), target: "/", to: unpinned, headers: [], timeout: .seconds(2))
            else {
                Issue.record("without the pin the name does not resolve")
                return
            }
            // The name travels in Host, the address only decides where the connection goes.
            #expect(try await server.stats().hosts == ["pinned.invalid:\(server.port)"])
        }
    }

    @Test func connectionsAreKeptAliveAndNothingIsFollowed() async throws {
        try await withServer { server, poster in
            let endpoint = try server.endpoint()
            for _ in 0..<5 { #expect(await server.post(poster, "/postbacks", to: endpoint) == .answered(status: 200)) }
            // A redirect is an answer: its Location (another port) is never contacted.
            #expect(await server.post(poster, "/status/307", to: endpoint) == .answered(status: 307))
            #expect(await server.post(poster, "/status/500", to: endpoint) == .answered(status: 500))
            let stats = try await server.stats()
            #expect(stats.targets == Array(repeating: "/postbacks", count: 5) + ["/status/307", "/status/500"])
            #expect(stats.connections == 1, "one keep-alive connection carried every POST")
        }
    }

    /// A server may close an idle keep-alive connection just as the next POST is sent on it: that POST is
    /// sent again on a new connection, not failed (the attempt was not the server's failure).
    @Test func aPooledConnectionClosedUnderARequestIsRetriedOnANewOne() async throws {
        try await withServer { server, poster in
            let endpoint = try server.endpoint()
            // The server answers this one, then drops the connection unanswered at its next request.
            #expect(await server.post(poster, "/drop-next", to: endpoint) == .answered(status: 200))
            let retried = await server.post(poster, "/postbacks", to: endpoint)
            #expect(retried == .answered(status: 200), "\(retried)")
            let stats = try await server.stats()
            #expect(stats.dropped == 1)
            #expect(stats.connections == 2)
            #expect(stats.targets == ["/drop-next", "/postbacks"])
        }
    }

    @Test func aSlowAnswerTimesOutAndABigOneEndsItsConnection() async throws {
        try await withServer { server, poster in
            let endpoint = try server.endpoint()
            let started = ContinuousClock.now
            let slow = await poster.post(ByteBuffer(), target: "/hang", to: endpoint, headers: [], timeout: .milliseconds(300))
            #expect(slow == .failed("timed out"))
            // Far below the server's 60 s: the timeout ended it, however busy the machine.
            #expect(ContinuousClock.now - started < .seconds(30))
            // A 100 kB answer: its status counts, its connection is not reused (the body is not read to the end).
            #expect(await server.post(poster, "/big", to: endpoint) == .answered(status: 200))
            #expect(await server.post(poster, "/postbacks", to: endpoint) == .answered(status: 200))
            #expect(try await server.stats().connections == 3)
            // Nothing listens: a failed attempt, described.
            let closed = try Self.endpoint(url: "http://127.0.0.1:\(try freeLoopbackPort())/")
            guard
                case .failed(let reason) = await poster.post(
                    ByteBuffer(), target: "/", to: closed, headers: [], timeout: .seconds(2))
            else {
                Issue.record("a closed port is a failed attempt")
                return
            }
            #expect(!reason.isEmpty)
        }
    }

    /// TLS: the certificate must chain to a trusted root and name the endpoint's host (the pinned name,
    /// not the address connected to); an IP literal must be in the certificate itself.
    @Test func httpsChecksTheCertificateAgainstThePinnedName() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("poster-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let certificate = directory.appendingPathComponent("cert.pem").path
        let key = directory.appendingPathComponent("key.pem").path
        let made = try ChildProcess.run(
            URL(fileURLWithPath: "/usr/bin/openssl"),
            arguments: [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key,
                "-out", certificate, "-days", "1", "-subj", "/CN=receiver.test", "-addext", "subjectAltName=DNS:receiver.test",
            ])
        try #require(made.status == 0, "openssl req: \(String(decoding: made.stderr, as: UTF8.self))")
        let server = try await TestHTTPServer.start(certificate: certificate, key: key)
        defer { server.stop() }
        let poster = try PostbackPoster(tlsConfiguration: TLSClientConfiguration(trustRoots: .file(certificate)))
        let named = try server.endpoint("receiver.test", address: "127.0.0.1")
        #expect(await server.post(poster, "/postbacks", to: named) == .answered(status: 200))

        let otherName = try server.endpoint("other.test", address: "127.0.0.1")
        let literal = try server.endpoint()
        let systemRoots = try PostbackPoster()
        for (client, endpoint) in [(poster, otherName), (poster, literal), (systemRoots, named)] {
            guard case .failed = await client.post(ByteBuffer(), target: "/", to: endpoint, headers: [], timeout: .seconds(2))
            else {
                Issue.record("\(endpoint) must fail the certificate check")
                continue
            }
        }
        #expect(try await server.stats().targets == ["/postbacks"])
        await poster.shutdown()
        await systemRoots.shutdown()
    }

    /// `url`'s endpoint as the dispatcher makes it: `DestinationPolicy.parse`, then `Endpoint(_:address:)`.
    static func endpoint(url: String, address: String? = nil) throws -> PostbackPoster.Endpoint {
        let destination = try #require(DestinationPolicy.parse(url))
        return try #require(PostbackPoster.Endpoint(destination, address: address.flatMap { IPAddress($0) }))
    }

    @Test(arguments: [
        ("https://h.example/postbacks?x=1#fragment", "/postbacks?x=1"),
        ("https://h.example", "/"),
        ("https://h.example:8443?x=1", "/?x=1"),
        ("https://[2001:db8::1]:8443/p", "/p"),
        ("https://h.example/a b\r\nX-Injected: 1", "/a%20b%0D%0AX-Injected:%201"),
        ("https://h.example/é", "/%C3%A9"),
    ])
    func theRequestTargetIsThePathAndQueryAndCannotAddAHeader(url: String, target: String) throws {
        let destination = try #require(DestinationPolicy.parse(url))
        #expect(PostbackPoster.requestTarget(destination.pathAndQuery) == target)
    }

    /// What a POST may connect to: a literal or an allow-listed host as it is, a name only through its
    /// checked answer (`pinned`), nothing private.
    @Test func resolutionSaysWhereAPostMayConnect() async throws {
        let resolver = DestinationResolver(policy: DestinationPolicy(allowList: "receiver:8080"))
        #expect(await resolver.resolve("https://8.8.8.8/p") == .direct)
        #expect(await resolver.resolve("http://receiver:8080/p") == .direct)
        #expect(await resolver.resolve("https://localhost/p") == .refused(.privateAddress))
        #expect(await resolver.resolve("https://[::127.0.0.1]/p") == .refused(.privateAddress))
        #expect(await resolver.resolve("https://pinned.invalid/p") == .refused(.unresolvable))
    }
}

/// Python's threading HTTP/1.1 server (keep-alive), optionally over TLS. POST paths choose the answer:
/// `/status/N`, `/hang` (60 s), `/big` (100 kB body), `/drop-next` (the connection's next request is
/// closed unanswered); GET /stats reports what the POSTs saw.
private final class TestHTTPServer: Sendable {
    let port: Int
    private let process: Process
    private let secure: Bool

    struct Stats: Decodable {
        var connections: Int
        var targets: [String]
        var hosts: [String]
        var dropped: Int
    }

    static let script = """
        import http.server, json, ssl, sys, threading, time
        port = int(sys.argv[1])
        state = {"connections": 0, "targets": [], "hosts": [], "dropped": 0}
        lock = threading.Lock()
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def log_message(self, *args): pass
            def answer(self, status, body, location=None):
                self.send_response(status)
                if location: self.send_header("Location", location)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            def do_GET(self):
                with lock:
                    body = json.dumps(state).encode()
                self.answer(200, body)
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if getattr(self, "drop_next", False):
                    with lock: state["dropped"] += 1
                    self.close_connection = True
                    return
                with lock:
                    if not getattr(self, "counted", False):
                        self.counted = True
                        state["connections"] += 1
                    state["targets"].append(self.path)
                    state["hosts"].append(self.headers.get("Host"))
                if self.path == "/hang": time.sleep(60)
                if self.path == "/drop-next": self.drop_next = True
                status = int(self.path.split("/status/")[1]) if self.path.startswith("/status/") else 200
                body = b"x" * 100000 if self.path == "/big" else b"{}"
                self.answer(status, body, "http://127.0.0.1:9/elsewhere" if 300 <= status < 400 else None)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        if len(sys.argv) > 2:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(sys.argv[2], sys.argv[3])
            server.socket = context.wrap_socket(server.socket, server_side=True)
        server.serve_forever()
        """

    private init(port: Int, process: Process, secure: Bool) {
        self.port = port
        self.process = process
        self.secure = secure
    }

    /// The server, once it answers.
    static func start(certificate: String? = nil, key: String? = nil) async throws -> TestHTTPServer {
        let port = try freeLoopbackPort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, String(port)] + [certificate, key].compactMap { $0 }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let server = TestHTTPServer(port: port, process: process, secure: certificate != nil)
        for _ in 0..<100 {
            if (try? await server.stats()) != nil { return server }
            try await Task.sleep(for: .milliseconds(50))
        }
        server.stop()
        throw TestSupportError("the test HTTP server did not start on port \(port)")
    }

    func stop() { kill(process.processIdentifier, SIGKILL) }  // inherits the runner's blocked SIGTERM

    /// This server's endpoint under `host` (pinned to `address` when given), made as the dispatcher makes one.
    func endpoint(_ host: String = "127.0.0.1", address: String? = nil) throws -> PostbackPoster.Endpoint {
        try PostbackPosterTests.endpoint(url: "\(secure ? "https" : "http")://\(host):\(port)/", address: address)
    }

    func post(_ poster: PostbackPoster, _ target: String, to endpoint: PostbackPoster.Endpoint) async
        -> PostbackPoster.Outcome
    {
        // Generous: the suites run in parallel, and a loaded machine can take seconds to serve one (a
        // retried POST shares its deadline with the attempt before it).
        await poster.post(
            ByteBuffer(string: "{}"), target: target, to: endpoint, headers: [("Content-Type", "application/json")],
            timeout: .seconds(10))
    }

    func stats() async throws -> Stats {
        var configuration = HTTPClient.Configuration()
        configuration.tlsConfiguration = .makeClientConfiguration()
        configuration.tlsConfiguration?.certificateVerification = .none  // the test's own server
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let body: Result<ByteBuffer, any Error>
        do {
            let response = try await client.execute(
                HTTPClientRequest(url: "\(secure ? "https" : "http")://127.0.0.1:\(port)/stats"), timeout: .seconds(5))
            body = .success(try await response.body.collect(upTo: 1 << 20))
        } catch {
            body = .failure(error)
        }
        try await client.shutdown()
        return try JSONDecoder().decode(Stats.self, from: Data(buffer: try body.get()))
    }
}
