internal import COpenSSL
import Foundation

/// SHA-256 (FIPS 180-4) by the system's libcrypto: request fingerprints, password hashes for Redis's
/// ACL file, key ids.
public enum SHA256 {
    /// The 32-byte digest of `data`.
    public static func hash(data: some DataProtocol) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        let bytes = Array(data)
        let status = bytes.withUnsafeBytes { input in
            digest.withUnsafeMutableBytes { output in
                EVP_Digest(
                    input.baseAddress, input.count, output.baseAddress?.assumingMemoryBound(to: UInt8.self), nil,
                    LibCrypto.sha256, nil)
            }
        }
        // Only an allocation failure inside libcrypto can fail a digest of bytes in memory.
        precondition(status == 1, "SHA-256 failed in libcrypto")
        return digest
    }
}

/// HMAC (RFC 2104) with SHA-256, by the system's libcrypto: the keyed hash behind postback identifiers
/// and their random delays.
public enum HMACSHA256 {
    /// The 32-byte authentication code of `message` under `key`.
    public static func authenticationCode(for message: [UInt8], key: [UInt8]) -> [UInt8] {
        var code = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let result = key.withUnsafeBytes { key in
            message.withUnsafeBytes { message in
                code.withUnsafeMutableBytes { output in
                    COpenSSL.HMAC(
                        LibCrypto.sha256, key.baseAddress, Int32(key.count),
                        message.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count,
                        output.baseAddress?.assumingMemoryBound(to: UInt8.self), &length)
                }
            }
        }
        precondition(result != nil && length == 32, "HMAC-SHA256 failed in libcrypto")
        return code
    }
}
