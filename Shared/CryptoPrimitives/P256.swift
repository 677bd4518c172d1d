internal import COpenSSL
import Foundation

/// ECDSA on P-256 with SHA-256 (ES256), by the system's libcrypto, under the names swift-crypto gives
/// them: ad networks' impression signatures, the dispatcher's postback signatures, SKAdNetwork's P-256
/// signatures. The system library instead of swift-crypto's copy of BoringSSL because that copy alone
/// was a fifth of a newcomer's first build (57–86 s of CPU on 2 cores), for these few calls.
public enum P256 {
    public enum Signing {}
}

/// Why a key or signature was refused, in OpenSSL's words where it gave any.
public struct CryptoPrimitivesError: Error, Sendable, CustomStringConvertible {
    public let description: String

    init(_ reason: String) {
        description = LibCrypto.lastError().map { "\(reason) (OpenSSL: \($0))" } ?? reason
    }
}

/// One libcrypto key, freed with its last user. libcrypto allows concurrent signing and verifying with
/// one key that nothing modifies, and nothing here modifies a key after it is made.
final class EVPKey: @unchecked Sendable {
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { EVP_PKEY_free(pointer) }

    /// The key, once it is an EC key on P-256 that passes libcrypto's own check (the point on the curve
    /// and of the group's order; a private scalar in range and matching its public point).
    static func checkedP256(_ pointer: OpaquePointer, isPrivate: Bool) throws(CryptoPrimitivesError) -> EVPKey {
        let key = EVPKey(pointer)
        var name = [CChar](repeating: 0, count: 32)
        var length = 0
        guard EVP_PKEY_get_base_id(pointer) == EVP_PKEY_EC,
            EVP_PKEY_get_group_name(pointer, &name, name.count, &length) == 1,
            String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) == "prime256v1"
        else { throw CryptoPrimitivesError("not an elliptic-curve key on P-256") }
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, pointer, nil) else {
            throw CryptoPrimitivesError("cannot check the key")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard (isPrivate ? EVP_PKEY_check(context) : EVP_PKEY_public_check(context)) == 1 else {
            throw CryptoPrimitivesError("not a valid P-256 key")
        }
        // Uncompressed points, whatever form the key came in: the DER and x963 forms below assume it.
        guard EVP_PKEY_set_utf8_string_param(pointer, "point-format", "uncompressed") == 1 else {
            throw CryptoPrimitivesError("cannot set the key's point format")
        }
        return key
    }
}

extension P256.Signing {
    /// A P-256 public key.
    public struct PublicKey: Sendable {
        let key: EVPKey
        /// The DER SubjectPublicKeyInfo (91 bytes: a fixed header, then the uncompressed point).
        public let derRepresentation: Data

        /// The header of every P-256 SubjectPublicKeyInfo with an uncompressed point.
        static let spkiPrefix = Data([
            0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x08, 0x2A, 0x86, 0x48,
            0xCE, 0x3D, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
        ])

        init(checked key: EVPKey) throws(CryptoPrimitivesError) {
            guard let der = LibCrypto.encode({ i2d_PUBKEY(key.pointer, $0) }), der.count == 91,
                der.starts(with: Self.spkiPrefix)
            else { throw CryptoPrimitivesError("cannot encode the public key") }
            self.key = key
            derRepresentation = der
        }

        /// From a DER SubjectPublicKeyInfo, which must be all of `derRepresentation`.
        public init(derRepresentation der: some DataProtocol) throws(CryptoPrimitivesError) {
            guard let pointer = LibCrypto.decode(der, { d2i_PUBKEY(nil, $0, $1) }, free: EVP_PKEY_free) else {
                throw CryptoPrimitivesError("not a DER SubjectPublicKeyInfo")
            }
            try self.init(checked: EVPKey.checkedP256(pointer, isPrivate: false))
        }

        /// From the uncompressed point, `04 ‖ X ‖ Y` (ANSI X9.63, 65 bytes).
        public init(x963Representation point: some DataProtocol) throws(CryptoPrimitivesError) {
            guard point.count == 65, point.first == 0x04 else {
                throw CryptoPrimitivesError("a P-256 point is 65 bytes, 04 ‖ X ‖ Y")
            }
            try self.init(derRepresentation: Self.spkiPrefix + point)
        }

        /// From a PEM `PUBLIC KEY` (SubjectPublicKeyInfo) block.
        public init(pemRepresentation pem: String) throws(CryptoPrimitivesError) {
            try self.init(derRepresentation: PEM.der(of: pem, labels: ["PUBLIC KEY"]).der)
        }

        /// `04 ‖ X ‖ Y`.
        public var x963Representation: Data { derRepresentation.suffix(65) }
        /// `X ‖ Y`.
        public var rawRepresentation: Data { derRepresentation.suffix(64) }
        public var pemRepresentation: String { PEM.text(label: "PUBLIC KEY", der: derRepresentation) }

        /// Whether `signature` is this key's ECDSA signature of SHA-256(`data`).
        public func isValidSignature(_ signature: ECDSASignature, for data: some DataProtocol) -> Bool {
            guard let der = signature.derIfEncodable else { return false }
            let digest = SHA256.hash(data: data)
            guard let context = EVP_PKEY_CTX_new_from_pkey(nil, key.pointer, nil) else { return false }
            defer { EVP_PKEY_CTX_free(context) }
            let result = der.withUnsafeBytes { signature in
                EVP_PKEY_verify_init(context) == 1
                    && EVP_PKEY_verify(
                        context, signature.baseAddress?.assumingMemoryBound(to: UInt8.self), signature.count, digest,
                        digest.count) == 1
            }
            // A signature that does not verify leaves a reason on the thread's queue: not this caller's error.
            ERR_clear_error()
            return result
        }
    }

    /// A P-256 private key.
    public struct PrivateKey: Sendable {
        let key: EVPKey
        public let publicKey: PublicKey

        private init(checked key: EVPKey) throws(CryptoPrimitivesError) {
            guard let spki = LibCrypto.encode({ i2d_PUBKEY(key.pointer, $0) }) else {
                throw CryptoPrimitivesError("cannot encode the public key")
            }
            self.key = key
            publicKey = try PublicKey(derRepresentation: spki)
        }

        private init(sec1OrPKCS8 der: some DataProtocol, isPKCS8: Bool) throws(CryptoPrimitivesError) {
            let parsed = LibCrypto.decode(
                der, { isPKCS8 ? d2i_AutoPrivateKey(nil, $0, $1) : d2i_PrivateKey(EVP_PKEY_EC, nil, $0, $1) },
                free: EVP_PKEY_free)
            guard let parsed else { throw CryptoPrimitivesError("not a DER EC private key") }
            try self.init(checked: EVPKey.checkedP256(parsed, isPrivate: true))
        }

        /// A new random key.
        public init() {
            guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { fatalError("libcrypto has no EC keys") }
            defer { EVP_PKEY_CTX_free(context) }
            var pointer: OpaquePointer?
            guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_group_name(context, "P-256") == 1,
                EVP_PKEY_generate(context, &pointer) == 1, let pointer,
                let key = try? EVPKey.checkedP256(pointer, isPrivate: true), let made = try? Self(checked: key)
            else { fatalError("P-256 key generation failed in libcrypto: \(LibCrypto.lastError() ?? "no reason")") }
            self = made
        }

        /// From a PEM `PRIVATE KEY` (PKCS#8) or `EC PRIVATE KEY` (SEC1) block. An encrypted key is
        /// refused, never prompted for.
        public init(pemRepresentation pem: String) throws(CryptoPrimitivesError) {
            let (label, der) = try PEM.der(of: pem, labels: ["PRIVATE KEY", "EC PRIVATE KEY"])
            try self.init(sec1OrPKCS8: der, isPKCS8: label == "PRIVATE KEY")
        }

        /// From the 32-byte scalar (big-endian); the public point is computed from it.
        public init(rawRepresentation scalar: some DataProtocol) throws(CryptoPrimitivesError) {
            guard scalar.count == 32 else { throw CryptoPrimitivesError("a P-256 private key is 32 bytes") }
            // SEC1 ECPrivateKey: version 1, the scalar, the curve's OID, no public key.
            let sec1 =
                Data([0x30, 0x31, 0x02, 0x01, 0x01, 0x04, 0x20]) + scalar
                + Data([0xA0, 0x0A, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07])
            try self.init(sec1OrPKCS8: sec1, isPKCS8: false)
        }

        /// The 32-byte scalar.
        public var rawRepresentation: Data {
            var number: OpaquePointer?
            guard EVP_PKEY_get_bn_param(key.pointer, "priv", &number) == 1, let number else {
                fatalError("libcrypto cannot read a private key it made")
            }
            defer { BN_clear_free(number) }
            var scalar = Data(count: 32)
            let written = scalar.withUnsafeMutableBytes {
                BN_bn2binpad(number, $0.baseAddress?.assumingMemoryBound(to: UInt8.self), 32)
            }
            precondition(written == 32, "a P-256 scalar is 32 bytes")
            return scalar
        }

        /// PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`).
        public var pemRepresentation: String {
            guard let info = EVP_PKEY2PKCS8(key.pointer) else { fatalError("libcrypto cannot encode a private key it made") }
            defer { PKCS8_PRIV_KEY_INFO_free(info) }
            guard let der = LibCrypto.encode({ i2d_PKCS8_PRIV_KEY_INFO(info, $0) }) else {
                fatalError("libcrypto cannot encode a private key it made")
            }
            return PEM.text(label: "PRIVATE KEY", der: der)
        }

        /// The ECDSA signature of SHA-256(`data`), with a fresh random nonce.
        public func signature(for data: some DataProtocol) throws(CryptoPrimitivesError) -> ECDSASignature {
            let digest = SHA256.hash(data: data)
            guard let context = EVP_PKEY_CTX_new_from_pkey(nil, key.pointer, nil), EVP_PKEY_sign_init(context) == 1
            else { throw CryptoPrimitivesError("cannot start signing") }
            defer { EVP_PKEY_CTX_free(context) }
            var der = [UInt8](repeating: 0, count: 80)
            var length = der.count
            guard EVP_PKEY_sign(context, &der, &length, digest, digest.count) == 1 else {
                throw CryptoPrimitivesError("ECDSA signing failed")
            }
            return try ECDSASignature(derRepresentation: der.prefix(length))
        }
    }

    /// An ECDSA signature: r and s.
    public struct ECDSASignature: Sendable {
        /// `r ‖ s`, 32 bytes each (the form JWS uses).
        public let rawRepresentation: Data

        public init(rawRepresentation raw: some DataProtocol) throws(CryptoPrimitivesError) {
            guard raw.count == 64 else { throw CryptoPrimitivesError("a P-256 signature is 64 bytes, r ‖ s") }
            rawRepresentation = Data(raw)
        }

        /// From one DER ECDSA-Sig-Value (SEQUENCE of r and s), which must be all of the input.
        public init(derRepresentation der: some DataProtocol) throws(CryptoPrimitivesError) {
            guard let signature = LibCrypto.decode(der, { d2i_ECDSA_SIG(nil, $0, $1) }, free: ECDSA_SIG_free) else {
                throw CryptoPrimitivesError("not a DER ECDSA signature")
            }
            defer { ECDSA_SIG_free(signature) }
            var raw = Data(count: 64)
            let fits = raw.withUnsafeMutableBytes { bytes in
                let out = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
                return BN_bn2binpad(ECDSA_SIG_get0_r(signature), out, 32) == 32
                    && BN_bn2binpad(ECDSA_SIG_get0_s(signature), out + 32, 32) == 32
            }
            guard fits else { throw CryptoPrimitivesError("r or s is longer than 32 bytes") }
            rawRepresentation = raw
        }

        /// The DER form, minimal (r and s without padding).
        public var derRepresentation: Data {
            guard let der = derIfEncodable else { fatalError("libcrypto cannot encode two 32-byte numbers") }
            return der
        }

        var derIfEncodable: Data? {
            guard let signature = ECDSA_SIG_new() else { return nil }
            defer { ECDSA_SIG_free(signature) }
            let set = rawRepresentation.withUnsafeBytes { bytes -> Bool in
                let start = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
                guard let r = BN_bin2bn(start, 32, nil) else { return false }
                guard let s = BN_bin2bn(start + 32, 32, nil) else {
                    BN_free(r)
                    return false
                }
                // ECDSA_SIG_set0 takes both numbers over.
                guard ECDSA_SIG_set0(signature, r, s) == 1 else {
                    BN_free(r)
                    BN_free(s)
                    return false
                }
                return true
            }
            guard set else { return nil }
            return LibCrypto.encode { i2d_ECDSA_SIG(signature, $0) }
        }
    }
}
