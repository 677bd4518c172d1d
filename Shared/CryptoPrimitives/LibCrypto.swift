internal import COpenSSL
import Foundation

/// What every call into libcrypto shares: the SHA-256 implementation fetched once (an unfetched
/// `EVP_sha256()` is looked up in the provider store on every use), OpenSSL's reason for a failure, and
/// DER in and out of its `i2d_*` and `d2i_*` functions. `package`: AttributionCrypto's P-192 calls
/// (OpenSSLEC) use the same.
package enum LibCrypto {
    nonisolated(unsafe) static let sha256: OpaquePointer = {
        guard let digest = EVP_MD_fetch(nil, "SHA256", nil) else { fatalError("libcrypto has no SHA256") }
        return digest
    }()

    /// OpenSSL's reason for the last failure on this thread, if it gave one; the thread's error queue
    /// emptied either way, so a later call does not report this one.
    package static func lastError() -> String? {
        let error = ERR_get_error()
        ERR_clear_error()
        guard error != 0, let text = ERR_reason_error_string(error) else { return nil }
        return String(cString: text)
    }

    /// DER written by an `i2d_*` function (called once for the length, once to write).
    package static func encode(_ body: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32) -> Data? {
        let length = Int(body(nil))
        guard length > 0 else { return nil }
        var data = Data(count: length)
        let written = data.withUnsafeMutableBytes { bytes in
            var cursor = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
            return Int(body(&cursor))
        }
        return written == length ? data : nil
    }

    /// Reads one DER object with a `d2i_*` function; nil (the object freed with `free`) unless it spans
    /// all of `der` exactly: trailing bytes mean the input was not one object.
    package static func decode(
        _ der: some DataProtocol, _ parse: (UnsafeMutablePointer<UnsafePointer<UInt8>?>, Int) -> OpaquePointer?,
        free: (OpaquePointer) -> Void
    ) -> OpaquePointer? {
        let bytes = Array(der)
        return bytes.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            guard let start = buffer.baseAddress, !buffer.isEmpty else { return nil }
            var cursor: UnsafePointer<UInt8>? = start
            guard let object = parse(&cursor, buffer.count) else {
                ERR_clear_error()
                return nil
            }
            guard cursor.map({ $0 - start }) == buffer.count else {
                free(object)
                return nil
            }
            return object
        }
    }
}
