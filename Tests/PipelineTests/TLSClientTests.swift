import Foundation
import NIOCore
import NIOPosix
import TLSClient
import TestSupport
import Testing

/// `TLSClientHandler` against Python's `ssl` (OpenSSL's server side, configured independently): a
/// trusted certificate naming the server passes, and every certificate problem fails the connection
/// with OpenSSL's reason, before a byte of the request leaves in the clear.
@Suite("TLS client on the system's OpenSSL")
struct TLSClientTests {
    @Test("a trusted certificate naming the server: bytes both ways, across many records, TLS 1.2 and 1.3")
    func trustedServerEchoes() async throws {
        let pki = try TestPKI()
        for version in ["TLSv1_2", "TLSv1_3"] {
            let server = try await EchoServer.start(pki.server, maximumVersion: version)
            defer { server.stop() }
            let context = try TLSClientContext(TLSClientConfiguration(trustRoots: .file(pki.ca)))
            let payload = ByteBuffer(bytes: (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            #expect(try await server.exchange(context, name: "server.test", payload) == payload, "\(version)")
            // An IP literal: the address itself must be in the certificate.
            #expect(try await server.exchange(context, name: nil, ByteBuffer(string: "hello")) == ByteBuffer(string: "hello"))
        }
    }

    @Test(
        "unknown CA, wrong name, an expired certificate, an address not in it, a plaintext server: each refused with its reason")
    func certificateProblemsAreRefused() async throws {
        let pki = try TestPKI()
        let trusting = try TLSClientContext(TLSClientConfiguration(trustRoots: .file(pki.ca)))
        let good = try await EchoServer.start(pki.server)
        defer { good.stop() }
        let expired = try await EchoServer.start(pki.expired)
        defer { expired.stop() }
        let nameOnly = try await EchoServer.start(pki.nameOnly)
        defer { nameOnly.stop() }
        let plaintext = try await EchoServer.start(nil)
        defer { plaintext.stop() }
        let cases: [(EchoServer, TLSClientContext, String?, String)] = [
            (good, try TLSClientContext(), "server.test", "unable to get local issuer certificate"),
            (good, trusting, "other.test", "hostname mismatch"),
            (expired, trusting, "server.test", "certificate has expired"),
            (nameOnly, trusting, nil, "IP address mismatch"),
            (plaintext, trusting, "server.test", "TLS handshake failed"),
        ]
        for (server, context, name, reason) in cases {
            let error = await #expect(throws: TLSClientError.self, "\(reason)") {
                _ = try await server.exchange(context, name: name, ByteBuffer(string: "secret"))
            }
            #expect(error.map { "\($0)".contains(reason) } == true, "\(String(describing: error))")
        }
        // Nothing reached the plaintext server but the client's hello: the request never left in the clear.
        #expect(!plaintext.received.contains("secret"))
    }

    @Test("a server that demands a client certificate: refused without one, served with one")
    func mutualTLS() async throws {
        let pki = try TestPKI()
        let server = try await EchoServer.start(pki.server, clientCA: pki.ca)
        defer { server.stop() }
        let anonymous = try TLSClientContext(TLSClientConfiguration(trustRoots: .file(pki.ca)))
        await #expect(throws: (any Error).self) {
            _ = try await server.exchange(anonymous, name: "server.test", ByteBuffer(string: "x"))
        }
        let identified = try TLSClientContext(
            TLSClientConfiguration(
                trustRoots: .file(pki.ca), certificateChainFile: pki.client.certificate, privateKeyFile: pki.client.key))
        #expect(try await server.exchange(identified, name: "server.test", ByteBuffer(string: "x")) == ByteBuffer(string: "x"))
    }

    @Test("bad configuration fails at once, with what is wrong")
    func badConfiguration() throws {
        let pki = try TestPKI()
        #expect(throws: TLSClientError.self) {
            try TLSClientContext(TLSClientConfiguration(trustRoots: .file("/nonexistent.pem")))
        }
        #expect(throws: TLSClientError.self) {
            try TLSClientContext(TLSClientConfiguration(trustRoots: .file(pki.ca), certificateChainFile: pki.client.certificate))
        }
        #expect(throws: TLSClientError.self) {
            try TLSClientContext(
                TLSClientConfiguration(
                    trustRoots: .file(pki.ca), certificateChainFile: pki.client.certificate, privateKeyFile: pki.server.key))
        }
    }
}

/// A CA and certificates it signed, made by Python's `cryptography` in a temporary folder: the server's
/// (`server.test` and 127.0.0.1), an expired one, one naming only `server.test`, and a client's.
private struct TestPKI {
    struct Pair {
        var certificate: String
        var key: String
    }

    let ca: String
    let server: Pair
    let expired: Pair
    let nameOnly: Pair
    let client: Pair

    init() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tls-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        _ = try Python.run(Self.script, arguments: [folder])
        func pair(_ name: String) -> Pair { Pair(certificate: "\(folder)/\(name).pem", key: "\(folder)/\(name)-key.pem") }
        (ca, server, expired, nameOnly, client) = (
            "\(folder)/ca.pem", pair("server"), pair("expired"), pair("name-only"), pair("client")
        )
    }

    static let script = """
        import datetime, ipaddress, sys
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID
        folder = sys.argv[1]
        now = datetime.datetime.now(datetime.timezone.utc)
        def save(name, certificate, key):
            with open(f"{folder}/{name}.pem", "wb") as f: f.write(certificate.public_bytes(serialization.Encoding.PEM))
            with open(f"{folder}/{name}-key.pem", "wb") as f:
                f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        def name(text): return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca = (x509.CertificateBuilder().subject_name(name("test CA")).issuer_name(name("test CA"))
              .public_key(ca_key.public_key()).serial_number(1).not_valid_before(now - datetime.timedelta(days=1))
              .not_valid_after(now + datetime.timedelta(days=1))
              .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(ca_key, hashes.SHA256()))
        save("ca", ca, ca_key)
        def issue(file, cn, names, start, end, serial):
            key = ec.generate_private_key(ec.SECP256R1())
            builder = (x509.CertificateBuilder().subject_name(name(cn)).issuer_name(ca.subject).public_key(key.public_key())
                       .serial_number(serial).not_valid_before(start).not_valid_after(end))
            if names: builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
            save(file, builder.sign(ca_key, hashes.SHA256()), key)
        day = datetime.timedelta(days=1)
        both = [x509.DNSName("server.test"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
        issue("server", "server.test", both, now - day, now + day, 2)
        issue("expired", "server.test", both, now - 3 * day, now - 2 * day, 3)
        issue("name-only", "server.test", [x509.DNSName("server.test")], now - day, now + day, 4)
        issue("client", "client", None, now - day, now + day, 5)
        """
}

/// Python's `ssl` echo server on a loopback port (plaintext without a certificate), which records what it
/// received in the clear when it is plaintext.
private final class EchoServer: Sendable {
    let port: Int
    private let process: Process
    private let log: String

    static let script = """
        import socket, ssl, sys, threading
        port, log, cert, key, client_ca, version = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
        context = None
        if cert:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(cert, key)
            if version: context.maximum_version = getattr(ssl.TLSVersion, version)
            if client_ca:
                context.verify_mode = ssl.CERT_REQUIRED
                context.load_verify_locations(client_ca)
        listener = socket.create_server(("127.0.0.1", int(port)))
        def serve(connection):
            try:
                if context: connection = context.wrap_socket(connection, server_side=True)
                while True:
                    data = connection.recv(65536)
                    if not data: break
                    if not context:
                        with open(log, "ab") as f: f.write(data)
                    connection.sendall(data)
            except Exception:
                pass
            finally:
                connection.close()
        print("ready", flush=True)
        while True:
            connection, _ = listener.accept()
            threading.Thread(target=serve, args=(connection,), daemon=True).start()
        """

    private init(port: Int, process: Process, log: String) {
        (self.port, self.process, self.log) = (port, process, log)
    }

    static func start(_ identity: TestPKI.Pair?, clientCA: String? = nil, maximumVersion: String? = nil) async throws
        -> EchoServer
    {
        let port = try freeLoopbackPort()
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("echo-\(UUID().uuidString)").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments =
            ["python3", "-c", script, String(port), log]
            + [identity?.certificate, identity?.key, clientCA, maximumVersion].map { $0 ?? "" }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        _ = output.fileHandleForReading.availableData  // "ready": listening
        return EchoServer(port: port, process: process, log: log)
    }

    func stop() { kill(process.processIdentifier, SIGKILL) }

    /// What a plaintext server received.
    var received: String { (try? String(contentsOfFile: log, encoding: .isoLatin1)) ?? "" }

    /// Sends `payload` over TLS to this server and returns what came back (as many bytes as sent).
    func exchange(_ context: TLSClientContext, name: String?, _ payload: ByteBuffer) async throws -> ByteBuffer {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let answer = loop.makePromise(of: ByteBuffer.self)
        let expected = payload.readableBytes
        let channel = try await ClientBootstrap(group: loop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(TLSClientHandler(context: context, serverHostname: name))
                    try channel.pipeline.syncOperations.addHandler(Collector(answer: answer, expected: expected))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        let timeout = loop.scheduleTask(in: .seconds(10)) { answer.fail(TLSClientError("no answer within 10 s")) }
        channel.writeAndFlush(payload, promise: nil)
        defer {
            timeout.cancel()
            channel.close(promise: nil)
        }
        return try await answer.futureResult.get()
    }

    /// Collects `expected` bytes, or fails with the error the TLS handler reported.
    private final class Collector: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        let answer: EventLoopPromise<ByteBuffer>
        let expected: Int
        var received = ByteBuffer()

        init(answer: EventLoopPromise<ByteBuffer>, expected: Int) {
            (self.answer, self.expected) = (answer, expected)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var bytes = unwrapInboundIn(data)
            received.writeBuffer(&bytes)
            if received.readableBytes >= expected { answer.succeed(received) }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) { answer.fail(error) }

        func channelInactive(context: ChannelHandlerContext) {
            answer.fail(TLSClientError("closed after \(received.readableBytes) of \(expected) bytes"))
        }
    }
}
