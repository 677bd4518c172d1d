import CryptoPrimitives
import Foundation
import TestSupport
import Testing

/// The system libcrypto behind CryptoPrimitives, held to published answers (FIPS 180-2, RFC 4231,
/// RFC 6979) and to the key forms swift-crypto read and wrote, so that keys on disk, registered keys,
/// postback identifiers and signatures mean what they meant before.
@Suite("CryptoPrimitives on the system's libcrypto")
struct CryptoPrimitivesTests {
    static func bytes(_ hex: String) -> [UInt8] {
        stride(from: 0, to: hex.count, by: 2).map {
            let start = hex.index(hex.startIndex, offsetBy: $0)
            return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16)!
        }
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// RFC 6979 A.2.5: the P-256 key, and its SHA-256 signature of "sample".
    static let rfc6979Scalar = bytes("c9afa9d845ba75166b5c215767b1d6934e50c3db36e89b127b8a622b120f6721")
    static let rfc6979Point =
        "60fed4ba255a9d31c961eb74c6356d68c049b8923b61fa6ce669622e60f29fb6"
        + "7903fe1008b8bc99a41ae9e95628bc64f2f1b20c2d7e9f5177a3c294d4462299"
    static let rfc6979Signature =
        "efd48b2aacb6a8fd1140dd9cd45e81d69d2c877b56aaf991c34d0ea84eaf3716"
        + "f7cb1c942d657c41d436c7a1b6e29f65f3e900dbb9aff4064dc4ab2f843acda8"

    /// A SEC1 key as `openssl ecparam -name prime256v1 -genkey -noout` writes it, and its public key.
    static let sec1PEM = """
        -----BEGIN EC PRIVATE KEY-----
        MHcCAQEEIEWhAdVq4utdxz0Yq4RtCHSNCbOYsOzbp7gFE2CA9OZjoAoGCCqGSM49
        AwEHoUQDQgAE8GtqlKuwsaP7t4xs6d9OdN5DzfqbVFgnDEio8tWxPjJzn2ltF8FR
        QAExOuIweutm6kA5ZyBzkX4WJ6Ux61RxkA==
        -----END EC PRIVATE KEY-----
        """
    static let sec1PublicPEM = """
        -----BEGIN PUBLIC KEY-----
        MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE8GtqlKuwsaP7t4xs6d9OdN5Dzfqb
        VFgnDEio8tWxPjJzn2ltF8FRQAExOuIweutm6kA5ZyBzkX4WJ6Ux61RxkA==
        -----END PUBLIC KEY-----
        """

    @Test func digestsAreTheStandardOnes() {
        #expect(
            Self.hex(SHA256.hash(data: Data("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let code = HMACSHA256.authenticationCode(for: Array("what do ya want for nothing?".utf8), key: Array("Jefe".utf8))
        #expect(Self.hex(code) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        // Keys longer than the block are hashed first (RFC 4231 case 6).
        let long = HMACSHA256.authenticationCode(
            for: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8), key: [UInt8](repeating: 0xAA, count: 131))
        #expect(Self.hex(long) == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    @Test func theRFC6979KeyDerivesItsPointAndVerifiesItsSignature() throws {
        let key = try P256.Signing.PrivateKey(rawRepresentation: Self.rfc6979Scalar)
        #expect(Self.hex(key.publicKey.rawRepresentation) == Self.rfc6979Point)
        #expect(Self.hex(key.rawRepresentation) == Self.hex(Self.rfc6979Scalar))
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: Self.bytes(Self.rfc6979Signature))
        #expect(key.publicKey.isValidSignature(signature, for: Data("sample".utf8)))
        #expect(!key.publicKey.isValidSignature(signature, for: Data("samplf".utf8)))
        // A fresh signature (random nonce) verifies too, and differs from the deterministic one.
        let fresh = try key.signature(for: Data("sample".utf8))
        #expect(key.publicKey.isValidSignature(fresh, for: Data("sample".utf8)))
        #expect(fresh.rawRepresentation != signature.rawRepresentation)
        #expect(!P256.Signing.PrivateKey().publicKey.isValidSignature(fresh, for: Data("sample".utf8)))
    }

    @Test func keysRoundTripThroughEveryForm() throws {
        let key = P256.Signing.PrivateKey()
        #expect(key.pemRepresentation.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        let again = try P256.Signing.PrivateKey(pemRepresentation: key.pemRepresentation)
        #expect(again.rawRepresentation == key.rawRepresentation)
        let raw = try P256.Signing.PrivateKey(rawRepresentation: key.rawRepresentation)
        #expect(raw.publicKey.derRepresentation == key.publicKey.derRepresentation)

        let publicKey = key.publicKey
        #expect(publicKey.derRepresentation.count == 91 && publicKey.x963Representation.first == 0x04)
        for parsed in [
            try P256.Signing.PublicKey(derRepresentation: publicKey.derRepresentation),
            try P256.Signing.PublicKey(pemRepresentation: publicKey.pemRepresentation),
            try P256.Signing.PublicKey(x963Representation: publicKey.x963Representation),
        ] {
            #expect(parsed.rawRepresentation == publicKey.rawRepresentation)
        }
        let signature = try key.signature(for: Data("m".utf8))
        let fromDER = try P256.Signing.ECDSASignature(derRepresentation: signature.derRepresentation)
        #expect(fromDER.rawRepresentation == signature.rawRepresentation)
    }

    @Test func aSEC1KeyAsOpenSSLWritesItIsRead() throws {
        let key = try P256.Signing.PrivateKey(pemRepresentation: "\n" + Self.sec1PEM + "\n")
        #expect(key.publicKey.pemRepresentation == Self.sec1PublicPEM)
        let withParameters = "-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n" + Self.sec1PEM
        #expect(try P256.Signing.PrivateKey(pemRepresentation: withParameters).rawRepresentation == key.rawRepresentation)
    }

    @Test func whatIsNotAP256KeyOrSignatureIsRefused() throws {
        let encrypted = """
            -----BEGIN EC PRIVATE KEY-----
            Proc-Type: 4,ENCRYPTED
            DEK-Info: AES-128-CBC,FC531AB9DF800D05BFB8CF9D43DBA0BA

            AAAA
            -----END EC PRIVATE KEY-----
            """
        #expect(throws: CryptoPrimitivesError.self) { try P256.Signing.PrivateKey(pemRepresentation: encrypted) }
        #expect(throws: CryptoPrimitivesError.self) { try P256.Signing.PrivateKey(pemRepresentation: Self.sec1PublicPEM) }
        #expect(throws: CryptoPrimitivesError.self) {
            try P256.Signing.PrivateKey(rawRepresentation: [UInt8](repeating: 0, count: 32))
        }
        // The group's order n is not a scalar.
        let order = Self.bytes("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")
        #expect(throws: CryptoPrimitivesError.self) { try P256.Signing.PrivateKey(rawRepresentation: order) }

        let p384 = ForeignKeys.p384PublicKeyPEM
        #expect(throws: CryptoPrimitivesError.self) { try P256.Signing.PublicKey(pemRepresentation: p384) }
        let point = P256.Signing.PrivateKey().publicKey.x963Representation
        var offCurve = Array(point)
        offCurve[64] ^= 1
        #expect(throws: CryptoPrimitivesError.self) { try P256.Signing.PublicKey(x963Representation: offCurve) }
        #expect(throws: CryptoPrimitivesError.self) { try P256.Signing.PublicKey(x963Representation: point.dropFirst()) }
        let der = P256.Signing.PrivateKey().publicKey.derRepresentation
        #expect(throws: CryptoPrimitivesError.self) { try P256.Signing.PublicKey(derRepresentation: der + [0]) }

        #expect(throws: CryptoPrimitivesError.self) {
            try P256.Signing.ECDSASignature(rawRepresentation: [UInt8](repeating: 1, count: 63))
        }
        let signature = try P256.Signing.PrivateKey().signature(for: Data("m".utf8))
        #expect(throws: CryptoPrimitivesError.self) {
            try P256.Signing.ECDSASignature(derRepresentation: signature.derRepresentation + [0])
        }
        // r = s = 0 never verifies.
        let zero = try P256.Signing.ECDSASignature(rawRepresentation: [UInt8](repeating: 0, count: 64))
        #expect(!P256.Signing.PrivateKey().publicKey.isValidSignature(zero, for: Data("m".utf8)))
    }

    @Test func oneKeyVerifiesOnManyThreadsAtOnce() async throws {
        let key = P256.Signing.PrivateKey()
        let signature = try key.signature(for: Data("m".utf8))
        let results = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<64 {
                group.addTask { key.publicKey.isValidSignature(signature, for: Data((index % 2 == 0 ? "m" : "n").utf8)) }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results.filter { $0 }.count == 32)
    }
}
