import AttributionCrypto
import AttributionModel
import CryptoPrimitives
import Foundation
import Testing

@Suite("Compact JWS and keys")
struct JWSTests {
    let key = P256.Signing.PrivateKey()
    let payload = Data(#"{"hello":"world"}"#.utf8)

    @Test func signedJWSVerifiesAndRoundTripsItsParts() throws {
        let compact = try CompactJWS.sign(payload: payload, keyID: "example.adattributionkit", with: key)
        let jws = try CompactJWS(parsing: compact)
        #expect(jws.header == JWSHeader(alg: "ES256", kid: "example.adattributionkit"))
        #expect(jws.payload == payload)
        #expect(jws.signature.count == 64)
        try jws.verify(with: key.publicKey)
    }

    @Test func otherKeyDoesNotVerify() throws {
        let jws = try CompactJWS(parsing: CompactJWS.sign(payload: payload, keyID: "k", with: key))
        #expect(throws: JWSError.self) { try jws.verify(with: P256.Signing.PrivateKey().publicKey) }
        #expect(code { try jws.verify(with: P256.Signing.PrivateKey().publicKey) } == .invalidSignature)
    }

    @Test(arguments: [
        "", "a.b", "a.b.c.d", "..", "a..c", ".b.c", "a.b.",
    ])
    func compactFormNeedsThreeNonEmptyParts(_ text: String) {
        #expect(code { _ = try CompactJWS(parsing: text) } == .invalidComponents)
    }

    @Test func headerMustBeBase64URLJSONWithAlg() {
        let body = Base64URL.encode(payload)
        let signature = Base64URL.encode(Data(repeating: 1, count: 64))
        #expect(code { _ = try CompactJWS(parsing: "!!!.\(body).\(signature)") } == .invalidHeader)
        let noAlg = Base64URL.encode(Data(#"{"kid":"k"}"#.utf8))
        #expect(code { _ = try CompactJWS(parsing: "\(noAlg).\(body).\(signature)") } == .invalidHeader)
    }

    @Test(arguments: ["none", "HS256", "RS256", "es256"])
    func onlyES256IsAccepted(_ alg: String) throws {
        // A genuine ES256 signature under a swapped header: the alg check must refuse before any key use.
        let genuine = try CompactJWS.sign(payload: payload, keyID: "k", with: key).split(separator: ".")
        let header = Base64URL.encode(Data(#"{"alg":"\#(alg)","kid":"k"}"#.utf8))
        let jws = try CompactJWS(parsing: "\(header).\(genuine[1]).\(genuine[2])")
        #expect(code { try jws.verify(with: key.publicKey) } == .unsupportedAlgorithm)
    }

    @Test func signatureMustBeRawRS() throws {
        let parts = try CompactJWS.sign(payload: payload, keyID: "k", with: key).split(separator: ".")
        let der = try key.signature(for: Data("\(parts[0]).\(parts[1])".utf8)).derRepresentation
        let jws = try CompactJWS(parsing: "\(parts[0]).\(parts[1]).\(Base64URL.encode(der))")
        #expect(code { try jws.verify(with: key.publicKey) } == .invalidSignature)
    }

    @Test func escapedSlashInHeaderKidParsesToTheSameValue() throws {
        let header = Base64URL.encode(Data(#"{"alg":"ES256","kid":"apple-cas-identifier\/0"}"#.utf8))
        let compact = try Self.sign(header: header, payload: payload, with: key)
        let jws = try CompactJWS(parsing: compact)
        #expect(jws.header.kid == "apple-cas-identifier/0")
        try jws.verify(with: key.publicKey)
    }

    @Test func jwkRoundTripsThePublicKey() throws {
        let jwk = JWK(publicKey: key.publicKey, keyID: "example.adattributionkit")
        #expect(jwk.kty == "EC" && jwk.crv == "P-256" && jwk.alg == "ES256")
        #expect(try jwk.publicKey().rawRepresentation == key.publicKey.rawRepresentation)
        let decoded = try JSONDecoder().decode(JWK.self, from: Data(jwk.jsonString.utf8))
        #expect(decoded == jwk)
        let set = JWKSet(keys: [jwk])
        #expect(set.key(withID: "example.adattributionkit") == jwk)
        #expect(set.key(withID: "other") == nil)
    }

    @Test func brokenJWKIsAnInvalidKey() {
        var jwk = JWK(publicKey: key.publicKey, keyID: "k")
        jwk.x = Base64URL.encode(Data(repeating: 7, count: 31))
        #expect(code { _ = try jwk.publicKey() } == .invalidKey)
        var rsa = JWK(publicKey: key.publicKey, keyID: "k")
        rsa.kty = "RSA"
        #expect(code { _ = try rsa.publicKey() } == .invalidKey)
    }

    @Test func parsePublicKeyAcceptsPEMAndJWK() throws {
        let expected = key.publicKey.rawRepresentation
        #expect(try JWK.parsePublicKey(key.publicKey.pemRepresentation).rawRepresentation == expected)
        #expect(try JWK.parsePublicKey("\n  " + key.publicKey.pemRepresentation + "\n").rawRepresentation == expected)
        let jwk = JWK(publicKey: key.publicKey, keyID: "k").jsonString
        #expect(try JWK.parsePublicKey(jwk).rawRepresentation == expected)
    }

    @Test func parsePublicKeyRefusesOtherText() {
        #expect(code { _ = try JWK.parsePublicKey("not a key") } == .invalidKey)
        #expect(code { _ = try JWK.parsePublicKey(key.pemRepresentation) } == .invalidKey)  // a private key
        #expect(code { _ = try JWK.parsePublicKey("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----") } == .invalidKey)
        // A JWK with its private part, or meant for another algorithm, is refused, not stripped.
        func jwk(_ change: (inout [String: Any]) -> Void) -> String {
            let text = JWK(publicKey: key.publicKey, keyID: "k").jsonString
            var object = (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]) ?? [:]
            change(&object)
            return String(decoding: (try? JSONSerialization.data(withJSONObject: object)) ?? Data(), as: UTF8.self)
        }
        #expect(code { _ = try JWK.parsePublicKey(jwk { $0["d"] = Base64URL.encode(key.rawRepresentation) }) } == .invalidKey)
        #expect(code { _ = try JWK.parsePublicKey(jwk { $0["alg"] = "RS256" }) } == .invalidKey)
        #expect(throws: Never.self) { try JWK.parsePublicKey(jwk { $0["alg"] = nil }) }
    }

    @Test func base64URLHasNoPaddingAndRefusesIt() {
        #expect(Base64URL.encode(Data([0xFB, 0xFF])) == "-_8")
        #expect(Base64URL.decode("-_8") == Data([0xFB, 0xFF]))
        #expect(Base64URL.decode("-_8=") == nil)
    }

    /// The byte-table codec against Foundation's base64 with the RFC 7515 replacements, on every
    /// length up to 64 with random bytes; and the inputs it must refuse.
    @Test func base64URLMatchesFoundation() {
        var generator = SystemRandomNumberGenerator()
        for length in 0...64 {
            let bytes = Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) })
            let reference = bytes.base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            #expect(Base64URL.encode(bytes) == reference)
            #expect(Base64URL.decode(reference) == bytes)
        }
        for refused in ["A", "AAAAA", "ab+c", "ab/c", "ab c", "abc=", "é", "ab\u{0}c"] {
            #expect(Base64URL.decode(refused) == nil, "\(refused)")
        }
        #expect(Base64URL.decode("") == Data())
    }

    /// Signs an arbitrary, already encoded header, as a foreign signer with its own JSON writer would.
    static func sign(header: String, payload: Data, with key: P256.Signing.PrivateKey) throws -> String {
        let input = header + "." + Base64URL.encode(payload)
        return input + "." + Base64URL.encode(try key.signature(for: Data(input.utf8)).rawRepresentation)
    }
}

/// The code of the JWSError `body` throws; nil when it throws nothing (another error is recorded as an issue).
func code(_ body: () throws -> Void) -> JWSError.Code? {
    do {
        try body()
        return nil
    } catch let error as JWSError {
        return error.code
    } catch {
        Issue.record("expected a JWSError, got \(error)")
        return nil
    }
}
