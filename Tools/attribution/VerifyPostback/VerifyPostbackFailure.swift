import AttributionCrypto
import AttributionModel
import Foundation

/// Why `verify-postback` refused: a stable reason code (JWSError's, or `unreadable-input` and
/// `key-unavailable` for what happens before any verification) and a detail for people.
struct VerifyPostbackFailure: Error {
    var code: String
    var detail: String

    init(code: String, detail: String) {
        self.code = code
        self.detail = detail
    }

    init(_ error: JWSError) {
        self.init(code: error.code.rawValue, detail: error.reason)
    }

    /// `{"detail": "...", "error": "<code>"}` on one line.
    var json: String {
        let object = ["error": code, "detail": detail]
        return (try? String(decoding: JSONCoding.encoder.encode(object), as: UTF8.self)) ?? #"{"error":"\#(code)"}"#
    }
}
