import AttributionCrypto
import AttributionModel
import CryptoPrimitives
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `attribution verify-postback`: its core (`PostbackBodyVerifier`) in process, then the built binary.
@Suite("verify-postback")
struct VerifyPostbackCommandTests {
    static let keyID = "attribution-pipeline/0"
    let aakKey = P256.Signing.PrivateKey()
    let skanKey = P256.Signing.PrivateKey()

    func aakBody(signedWith key: P256.Signing.PrivateKey? = nil) throws -> Data {
        let payload = PostbackVerifierTests.payload
        let jws = try CompactJWS.sign(payload: JSONCoding.encoder.encode(payload), keyID: Self.keyID, with: key ?? aakKey)
        let order = PostbackOrder(
            payload: payload, adInteractionType: .view, conversionValue: 42, coarseConversionValue: nil, countryCode: nil,
            isDevelopment: false)
        return try JSONCoding.encoder.encode(PostbackBody(order: order, jwsString: jws))
    }

    func skanBody(_ version: SKANPostbackVersion = .v4) throws -> Data {
        try SKANFixture.body(SKANPostbackSigner.signed(SKANFixture.postback(version), with: skanKey))
    }

    // MARK: - Core

    @Test func aakBodyVerifiesWithOneKeyWhateverItsKid() throws {
        let verified = try PostbackBodyVerifier.verify(body: aakBody(), key: .publicKey(SKANPublicKey(aakKey.publicKey)))
        guard case .adAttributionKit(let postback) = verified else { throw PostbackKindMismatch() }
        #expect(postback.keyID == Self.keyID)
        #expect(postback.payload == PostbackVerifierTests.payload)
        #expect(verified.kind == .adAttributionKit)
    }

    @Test func aakBodyVerifiesWithAKeySetByKid() throws {
        let keys = JWKSet(keys: [JWK(publicKey: aakKey.publicKey, keyID: Self.keyID)])
        #expect(try PostbackBodyVerifier.verify(body: aakBody(), key: .keySet(keys)).kind == .adAttributionKit)
    }

    @Test func skanBodyVerifiesWithItsKey() throws {
        let verified = try PostbackBodyVerifier.verify(body: skanBody(), key: .publicKey(SKANPublicKey(skanKey.publicKey)))
        guard case .skAdNetwork(let postback) = verified else { throw PostbackKindMismatch() }
        #expect(postback.sourceIdentifier == "5239")
    }

    /// The pipeline signs SKAdNetwork 4.0 postbacks with one of its published keys, which names no kid:
    /// a key set verifies them by trying each key, and `verifyAny` shows them through the common fields.
    @Test func skanBodyVerifiesWithTheKeySetThatHoldsItsKey() throws {
        let keySet = JWKSet(keys: [
            JWK(publicKey: aakKey.publicKey, keyID: Self.keyID), JWK(publicKey: skanKey.publicKey, keyID: "pipeline/1"),
        ])
        let verified = try PostbackBodyVerifier.verify(body: skanBody(), key: .keySet(keySet))
        #expect(verified.kind == .skAdNetwork)
        let common = try PostbackVerifier.verifyAny(body: skanBody(), keys: keySet)
        #expect(common.kind == .skAdNetwork && common.keyID == "pipeline/1")
        #expect(common.payload.sourceIdentifier == "5239" && common.body.jwsString.isEmpty)
    }

    @Test func applesKeysVerifyApplesExample() throws {
        let verified = try PostbackBodyVerifier.verify(body: SKANAppleExample.version3Winning.body, key: .apple)
        #expect(verified.kind == .skAdNetwork)
    }

    @Test func applesKeysVerifyApplesAdAttributionKitExampleByItsKidOnly() throws {
        let verified = try PostbackBodyVerifier.verify(body: AAKAppleExample.body, key: .apple)
        guard case .adAttributionKit(let postback) = verified else {
            Issue.record("not an AdAttributionKit postback")
            return
        }
        // The header's `apple-development-identifier\/1` is the kid it names, parsed, not as written.
        #expect(postback.keyID == AAKAppleExample.keyID)
        #expect(postback.payload.advertisedItemIdentifier == AAKAppleExample.advertisedItemIdentifier)
        #expect(postback.payload.postbackIdentifier == "85546EB7-FD39-44BC-8990-C98A4AC36A49")
        #expect(postback.payload.conversionType == .reengagement && postback.payload.didWin)
        // Apple's other two keys do not verify it, even when one is listed under its kid.
        for other in JWKSet.appleAdAttributionKit.keys where other.kid != AAKAppleExample.keyID {
            var impostor = other
            impostor.kid = AAKAppleExample.keyID
            #expect(
                SKANFixture.error { _ = try PostbackVerifier.verify(body: AAKAppleExample.body, keys: JWKSet(keys: [impostor])) }?
                    .code == .invalidSignature)
        }
    }

    @Test func keyKindMustFitTheBody() throws {
        let keySet = JWKSet(keys: [JWK(publicKey: aakKey.publicKey, keyID: Self.keyID)])
        let p192 = try SKANP192SigningKey().publicKey
        // A key set verifies a SKAdNetwork body with whichever of its keys signed it; none did here.
        #expect(
            SKANFixture.error { _ = try PostbackBodyVerifier.verify(body: skanBody(), key: .keySet(keySet)) }?.code
                == .invalidSignature)
        #expect(
            SKANFixture.error { _ = try PostbackBodyVerifier.verify(body: aakBody(), key: .apple) }?.code
                == .invalidKey)
        #expect(
            SKANFixture.error { _ = try PostbackBodyVerifier.verify(body: aakBody(), key: .publicKey(p192)) }?.code == .invalidKey
        )
    }

    @Test(arguments: [#"{"jws-string":"a.b.c","attribution-signature":"MAY="}"#, #"{"conversion-value":1}"#, "[]", "x"])
    func bodyWithBothOrNeitherSignatureIsInvalidComponents(_ text: String) {
        let error = SKANFixture.error { _ = try PostbackBodyVerifier.kind(of: Data(text.utf8)) }
        #expect(error?.code == .invalidComponents)
    }

    // MARK: - The binary

    @Test func skanPostbackFromStdinPrintsItsFields() throws {
        let run = try Self.attribution(["--public-key", SKANPublicKey(skanKey.publicKey).spkiBase64], stdin: skanBody())
        #expect(run.status == 0, "\(run.stderr)")
        let fields = try run.object()
        #expect(fields["kind"] as? String == "skadnetwork")
        #expect(fields["source-identifier"] as? String == "5239")
        #expect(fields["app-id"] as? Int == 525_463_029)
        #expect(fields["did-win"] as? Bool == true)
        #expect(run.stderr.isEmpty)
    }

    @Test func p192PostbackFromAFileWithAPEMKeyFile() throws {
        let legacy = try SKANP192SigningKey()
        let body = try SKANFixture.body(SKANPostbackSigner.signed(SKANFixture.postback(.v2), with: legacy))
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let bodyFile = directory.appendingPathComponent("postback.json")
        let keyFile = directory.appendingPathComponent("apple-p192.pem")
        try body.write(to: bodyFile)
        try legacy.publicKey.pemRepresentation.write(to: keyFile, atomically: true, encoding: .utf8)
        let run = try Self.attribution(["--file", bodyFile.path, "--public-key", "@\(keyFile.path)"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try run.object()["version"] as? String == "2.0")
    }

    @Test func applesExampleVerifiesWithApplesKeys() throws {
        let run = try Self.attribution(["--public-key", "apple"], stdin: SKANAppleExample.webAdLowTier.body)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try run.object()["coarse-conversion-value"] as? String == "high")
    }

    @Test func applesAdAttributionKitExampleVerifiesWithApplesKeys() throws {
        let run = try Self.attribution(["--public-key", "apple"], stdin: AAKAppleExample.body)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains(#""advertised-item-identifier":10738027756"#), "exact above 2³²: \(run.stdout)")
        let fields = try run.object()
        #expect(fields["kid"] as? String == AAKAppleExample.keyID)
        #expect(fields["conversion-type"] as? String == "re-engagement")
        #expect(fields["conversion-value"] as? Int == 24 && fields["country-code"] as? String == "US")
    }

    @Test func aakPostbackPrintsSignedAndUnsignedFieldsWithItsKid() throws {
        let run = try Self.attribution(["--public-key=\(aakKey.publicKey.pemRepresentation)"], stdin: aakBody())
        #expect(run.status == 0, "\(run.stderr)")
        let fields = try run.object()
        #expect(fields["kind"] as? String == "adattributionkit")
        #expect(fields["kid"] as? String == Self.keyID)
        #expect(fields["postback-identifier"] as? String == PostbackVerifierTests.payload.postbackIdentifier)
        #expect(fields["did-win"] as? Bool == true)
        #expect(fields["ad-interaction-type"] as? String == "view")
        #expect(fields["conversion-value"] as? Int == 42)
        #expect(fields["jws-string"] == nil)
    }

    @Test func aakPostbackVerifiesWithAJWKFromAFile() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyFile = directory.appendingPathComponent("key.jwk.json")
        try JWK(publicKey: aakKey.publicKey, keyID: "anything").jsonString.write(to: keyFile, atomically: true, encoding: .utf8)
        let run = try Self.attribution(["--public-key", "@\(keyFile.path)"], stdin: aakBody())
        #expect(run.status == 0, "\(run.stderr)")
        // The body's kid, not the JWK's: one key given by hand stands for whatever kid the header names.
        #expect(try run.object()["kid"] as? String == Self.keyID)
    }

    @Test func aakPostbackVerifiesWithTheKeyOfAJWKSURL() throws {
        let keys = JWKSet(keys: [JWK(publicKey: aakKey.publicKey, keyID: Self.keyID)])
        let server = try OneDocumentServer(document: JSONCoding.encoder.encode(keys))
        defer { server.stop() }
        let run = try Self.attribution(["--jwks-url", "http://127.0.0.1:\(server.port)/.well-known/jwks.json"], stdin: aakBody())
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try run.object()["kid"] as? String == Self.keyID)
    }

    @Test func refusalsExitOneWithAReasonCodeOnStderr() throws {
        let p192 = try SKANP192SigningKey().publicKey.spkiBase64
        let skanKeyText = SKANPublicKey(skanKey.publicKey).spkiBase64
        var tampered = try #require(JSONSerialization.jsonObject(with: skanBody()) as? [String: Any])
        tampered["source-identifier"] = "5238"
        let cases: [(String, [String], Data, String)] = [
            (
                "tampered SKAN field", ["--public-key", skanKeyText], try JSONSerialization.data(withJSONObject: tampered),
                "invalid-signature"
            ),
            ("P-192 key for 4.0", ["--public-key", p192], try skanBody(), "invalid-key"),
            ("not JSON", ["--public-key", skanKeyText], Data("not json".utf8), "invalid-components"),
            ("AAK signed by another key", ["--public-key", skanKeyText], try aakBody(), "invalid-signature"),
            (
                "unknown SKAN version", ["--public-key", "apple"],
                Data(String(decoding: try skanBody(), as: UTF8.self).replacingOccurrences(of: #""4.0""#, with: #""9.9""#).utf8),
                "invalid-components"
            ),
            ("bad key text", ["--public-key", "not-a-key"], try skanBody(), "invalid-key"),
            ("missing key file", ["--public-key", "@/nonexistent/key.pem"], try skanBody(), "unreadable-input"),
            ("SKAN with an unreachable JWKS", ["--jwks-url", "http://127.0.0.1:9/jwks.json"], try skanBody(), "key-unavailable"),
        ]
        for (name, arguments, body, code) in cases {
            let run = try Self.attribution(arguments, stdin: body)
            #expect(run.status == 1, "\(name)")
            #expect(run.stdout.isEmpty, "\(name)")
            // stderr is the one JSON line, nothing else.
            let error = try JSONSerialization.jsonObject(with: Data(run.stderr.utf8)) as? [String: String]
            #expect(run.stderr.split(separator: "\n").count == 1, "\(name): \(run.stderr)")
            #expect(error?["error"] == code, "\(name): \(run.stderr)")
            #expect(error?["detail"]?.isEmpty == false, "\(name)")
        }
    }

    @Test func keyOptionsAreExclusiveAndOneIsRequired() throws {
        #expect(try Self.attribution([], stdin: Data()).status == 64)
        #expect(try Self.attribution(["--public-key", "apple", "--jwks-url", "http://127.0.0.1:9/"], stdin: Data()).status == 64)
    }

    // MARK: - Support

    struct PostbackKindMismatch: Error {}

    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String

        func object() throws -> [String: Any] {
            try #require(JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any], "stdout: \(stdout)")
        }
    }

    /// Where `swift build` put the executables: PIPELINE_BIN_DIR (set by scripts/test.sh), else .build/debug.
    static func binary() throws -> URL {
        let directory = builtExecutables()
        let binary = directory.appendingPathComponent("attribution")
        try #require(
            FileManager.default.isExecutableFile(atPath: binary.path),
            "attribution is not built in \(directory.path): run `swift build --product attribution` first")
        return binary
    }

    static func attribution(_ arguments: [String], stdin: Data = Data()) throws -> Run {
        let run = try ChildProcess.run(try binary(), arguments: ["verify-postback"] + arguments, input: stdin)
        return Run(
            status: run.status, stdout: String(decoding: run.stdout, as: UTF8.self),
            stderr: String(decoding: run.stderr, as: UTF8.self))
    }

    static func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("verify-postback-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }
}

/// An HTTP server on a free loopback port that answers every request with one JSON document, to stand
/// in for a JWKS host.
final class OneDocumentServer: Sendable {
    let port: Int
    private let socketDescriptor: Int32

    struct SocketError: Error, CustomStringConvertible {
        var description: String
    }

    init(document: Data) throws {
        #if canImport(Glibc)
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw SocketError(description: "socket: \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(descriptor, address, length) == 0 && listen(descriptor, 8) == 0
                    && getsockname(descriptor, address, &length) == 0
            }
        }
        guard bound else {
            close(descriptor)
            throw SocketError(description: "bind/listen: \(errno)")
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        socketDescriptor = descriptor
        let response =
            Data(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(document.count)\r\nConnection: close\r\n\r\n"
                    .utf8)
            + document
        Thread {
            while true {
                let connection = accept(descriptor, nil, nil)
                guard connection >= 0 else { return }
                // Read the request head, then answer and close.
                var request = [UInt8]()
                var buffer = [UInt8](repeating: 0, count: 4096)
                while !request.suffix(4).elementsEqual([13, 10, 13, 10]) {
                    let count = read(connection, &buffer, buffer.count)
                    if count <= 0 { break }
                    request += buffer.prefix(count)
                }
                _ = response.withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
                close(connection)
            }
        }.start()
    }

    func stop() {
        shutdown(socketDescriptor, Int32(SHUT_RDWR))
        close(socketDescriptor)
    }
}
