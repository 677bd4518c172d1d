import COpenSSL
import CryptoPrimitives
import Foundation

/// The few OpenSSL 3 calls the SKAdNetwork code needs: naming a key's curve, and verifying (and, for
/// test postbacks, making) P-192 signatures, which CryptoPrimitives (P-256 only) does not offer. Keys cross this
/// boundary as DER only, so nothing here holds an OpenSSL object beyond one call.
enum OpenSSLEC {
    /// The curve of an EC SubjectPublicKeyInfo, by OpenSSL short name (`prime256v1`, `prime192v1`,
    /// `secp384r1`...), or a JWSError that says why the DER is not one.
    static func curveName(spkiDER: Data) throws(JWSError) -> String {
        let key = try parsePublicKey(spkiDER)
        defer { EVP_PKEY_free(key) }
        return try curveName(of: key)
    }

    /// ECDSA with SHA-256 over `message`; `signatureDER` is an ASN.1 SEQUENCE of r and s.
    static func isValidSignature(_ signatureDER: Data, for message: Data, spkiDER: Data) throws(JWSError) -> Bool {
        try requireStrictDER(signatureDER)
        let key = try parsePublicKey(spkiDER)
        defer { EVP_PKEY_free(key) }
        guard let context = EVP_MD_CTX_new() else { throw failure("cannot allocate a digest context") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else {
            throw failure("cannot start an ECDSA verification")
        }
        let result = signatureDER.withUnsafeBytes { signature in
            message.withUnsafeBytes { message in
                EVP_DigestVerify(
                    context, signature.baseAddress?.assumingMemoryBound(to: UInt8.self), signature.count,
                    message.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count)
            }
        }
        // 1 = valid, 0 = does not verify, < 0 = could not check (e.g. r or s out of the curve's range).
        ERR_clear_error()
        return result == 1
    }

    /// A new key on `curve` (an OpenSSL group name such as `P-192`) as (SEC1 private DER, SPKI DER).
    static func generateKey(curve: String) throws(JWSError) -> (privateDER: Data, spkiDER: Data) {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { throw failure("cannot create an EC key context") }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_group_name(context, curve) == 1,
            EVP_PKEY_generate(context, &key) == 1, let key
        else { throw failure("cannot generate a \(curve) key") }
        defer { EVP_PKEY_free(key) }
        guard let privateDER = LibCrypto.encode({ i2d_PrivateKey(key, $0) }),
            let spkiDER = LibCrypto.encode({ i2d_PUBKEY(key, $0) })
        else { throw failure("cannot encode a key") }
        return (privateDER, spkiDER)
    }

    /// ECDSA with SHA-256; the signature is DER.
    static func sign(_ message: Data, privateDER: Data) throws(JWSError) -> Data {
        let parsed = privateDER.withUnsafeBytes { bytes in
            var cursor = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
            return d2i_AutoPrivateKey(nil, &cursor, bytes.count)
        }
        guard let key = parsed else { throw failure("private key is not DER", code: .invalidKey) }
        defer { EVP_PKEY_free(key) }
        guard let context = EVP_MD_CTX_new() else { throw failure("cannot allocate a digest context") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else { throw failure("cannot start signing") }
        var length = 0
        let signed = message.withUnsafeBytes { message in
            let bytes = message.baseAddress?.assumingMemoryBound(to: UInt8.self)
            guard EVP_DigestSign(context, nil, &length, bytes, message.count) == 1 else { return Data?.none }
            var signature = Data(count: length)
            let status = signature.withUnsafeMutableBytes { out in
                EVP_DigestSign(context, out.baseAddress?.assumingMemoryBound(to: UInt8.self), &length, bytes, message.count)
            }
            return status == 1 ? signature.prefix(length) : nil
        }
        guard let signed else { throw failure("ECDSA signing failed") }
        return Data(signed)
    }

    // MARK: - Helpers

    private static func parsePublicKey(_ der: Data) throws(JWSError) -> OpaquePointer {
        guard !der.isEmpty else { throw JWSError(.invalidKey, "public key is empty") }
        let (parsed, consumed) = der.withUnsafeBytes { bytes -> (OpaquePointer?, Int) in
            guard let start = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return (nil, 0) }
            var cursor: UnsafePointer<UInt8>? = start
            let key = d2i_PUBKEY(nil, &cursor, bytes.count)
            return (key, cursor.map { $0 - start } ?? 0)
        }
        guard let key = parsed else { throw failure("public key is not a DER SubjectPublicKeyInfo", code: .invalidKey) }
        // Trailing bytes mean the input was not one key: refuse rather than ignore them.
        guard consumed == der.count else {
            EVP_PKEY_free(key)
            throw JWSError(.invalidKey, "public key has \(der.count) bytes but its DER ends after \(consumed)")
        }
        return key
    }

    private static func curveName(of key: OpaquePointer) throws(JWSError) -> String {
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC else {
            throw JWSError(.invalidKey, "public key is not an elliptic-curve key (SKAdNetwork keys are P-256 or P-192)")
        }
        var name = [CChar](repeating: 0, count: 80)
        var length = 0
        guard EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1 else {
            throw failure("public key names no curve", code: .invalidKey)
        }
        return String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The signature must be one DER ECDSA-Sig-Value and nothing else: a truncated or padded value is
    /// a malformed signature, not merely one that fails to verify.
    private static func requireStrictDER(_ der: Data) throws(JWSError) {
        guard let signature = LibCrypto.decode(der, { d2i_ECDSA_SIG(nil, $0, $1) }, free: ECDSA_SIG_free) else {
            throw JWSError(.invalidSignature, "signature is not one DER ECDSA signature (SEQUENCE of r and s)")
        }
        ECDSA_SIG_free(signature)
    }

    /// A JWSError with OpenSSL's own reason appended, and the thread's error queue emptied.
    private static func failure(_ reason: String, code: JWSError.Code = .invalidComponents) -> JWSError {
        JWSError(code, LibCrypto.lastError().map { "\(reason) (OpenSSL: \($0))" } ?? reason)
    }
}
