import Foundation

/// A private CA and certificates it signs, made by the `openssl` command in a folder of their own: what
/// a TLS-only Redis and its clients use in the tests, `scripts/demo.sh --tls` and compose's TLS form.
/// Every key is P-256; every certificate is valid for two days from now unless made expired.
public struct TestCertificates: Sendable {
    /// A certificate (PEM) and its private key (PEM).
    public struct Pair: Sendable {
        public var certificate: String
        public var key: String
    }

    public let folder: URL
    /// The CA's certificate: the trust root to give clients and servers.
    public var ca: String { folder.appendingPathComponent("ca.pem").path }

    /// A new CA in `folder` (made if need be).
    public static func authority(in folder: URL, name: String = "attribution-pipeline test CA") throws -> TestCertificates {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let certificates = TestCertificates(folder: folder)
        try certificates.openssl(
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
            certificates.path("ca-key.pem"), "-out", certificates.ca, "-days", "2", "-subj", "/CN=\(name)",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")
        return certificates
    }

    /// A certificate the CA signs, as `<file>.pem` and `<file>-key.pem`: for `names` (DNS) and
    /// `addresses` (IP) as subject alternative names, for a server, or none, for a client. `expired`: valid
    /// only at the second it was made (so, expired a second later), for tests of that refusal.
    @discardableResult
    public func issue(_ file: String, names: [String] = [], addresses: [String] = [], expired: Bool = false) throws -> Pair {
        let pair = Pair(certificate: path("\(file).pem"), key: path("\(file)-key.pem"))
        let request = path("\(file).csr")
        try openssl(
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", pair.key, "-out",
            request, "-subj", "/CN=\(names.first ?? addresses.first ?? file)")
        let alternatives = names.map { "DNS:\($0)" } + addresses.map { "IP:\($0)" }
        let extensions = path("\(file).ext")
        try
            ((alternatives.isEmpty ? "" : "subjectAltName=\(alternatives.joined(separator: ","))\n")
            + "basicConstraints=CA:FALSE\n").write(toFile: extensions, atomically: true, encoding: .utf8)
        try openssl(
            "x509", "-req", "-in", request, "-CA", ca, "-CAkey", path("ca-key.pem"), "-set_serial",
            String(UInt32.random(in: 1...UInt32.max)), "-days", expired ? "0" : "2", "-out", pair.certificate,
            "-extfile", extensions)
        try? FileManager.default.removeItem(atPath: request)
        try? FileManager.default.removeItem(atPath: extensions)
        return pair
    }

    private func path(_ name: String) -> String { folder.appendingPathComponent(name).path }

    private func openssl(_ arguments: String...) throws {
        guard let executable = findExecutable("openssl") else {
            throw LaunchError("openssl is not on PATH; install it (Debian: apt-get install openssl)")
        }
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let errors = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        try process.run()
        let output = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw LaunchError(
                "openssl \(arguments.prefix(2).joined(separator: " ")) failed: \(String(decoding: output, as: UTF8.self))")
        }
    }
}
