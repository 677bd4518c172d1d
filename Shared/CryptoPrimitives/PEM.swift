import Foundation

/// PEM text (RFC 7468): one block's label and base64 body. Read by hand so that libcrypto never sees an
/// encrypted block (it would ask a terminal for the passphrase) and the labels accepted are exactly those
/// named.
enum PEM {
    /// The DER of the first block labelled one of `labels`; other blocks (an `EC PARAMETERS` block before
    /// an `EC PRIVATE KEY`, say) are skipped. Headers (`Proc-Type: 4,ENCRYPTED`) make the body not base64.
    static func der(of pem: String, labels: [String]) throws(CryptoPrimitivesError) -> (label: String, der: Data) {
        let lines = pem.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        for (index, line) in lines.enumerated() {
            guard let label = labels.first(where: { line == "-----BEGIN \($0)-----" }) else { continue }
            guard let end = lines[index...].firstIndex(of: "-----END \(label)-----") else {
                throw CryptoPrimitivesError("PEM block \(label) has no END line")
            }
            guard let der = Data(base64Encoded: lines[(index + 1)..<end].joined()), !der.isEmpty else {
                throw CryptoPrimitivesError("PEM block \(label) is not base64 DER (an encrypted key is not accepted)")
            }
            return (label, der)
        }
        throw CryptoPrimitivesError("no PEM block labelled \(labels.joined(separator: " or "))")
    }

    /// `-----BEGIN label-----`, the base64 of `der` in lines of 64, `-----END label-----`.
    static func text(label: String, der: Data) -> String {
        let body = der.base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN \(label)-----\n\(body)\n-----END \(label)-----"
    }
}
