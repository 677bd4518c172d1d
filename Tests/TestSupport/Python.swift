import Foundation

/// Runs the independent implementation the tests check against: `python3 -c script arguments…`
/// with Python's `cryptography`. Fails (never skips) when python3 or the package is missing.
public enum Python {
    /// Stdout of the script, or a `TestSupportError` carrying its stderr.
    public static func run(_ script: String, arguments: [String] = [], input: String = "") throws -> Data {
        let searchPath = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        guard
            let python3 = searchPath.split(separator: ":").map({ "\($0)/python3" })
                .first(where: { FileManager.default.isExecutableFile(atPath: $0) })
        else {
            throw TestSupportError("python3 is not on PATH (\(searchPath)); scripts/test.sh installs it with `cryptography`")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python3)
        process.arguments = ["-c", script] + arguments
        // Stdin from a file, not a pipe: a python3 that exits at once must not SIGPIPE the test process.
        let inputFile = FileManager.default.temporaryDirectory.appendingPathComponent("python-\(UUID().uuidString).txt")
        try Data(input.utf8).write(to: inputFile)
        defer { try? FileManager.default.removeItem(at: inputFile) }
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardInput = try FileHandle(forReadingFrom: inputFile)
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        let errors = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        if errors.contains("No module named 'cryptography'") {
            throw TestSupportError("python3 (\(python3)) lacks the `cryptography` package: pip install cryptography")
        }
        guard process.terminationStatus == 0 else {
            throw TestSupportError("python3 exited with \(process.terminationStatus): \(errors)")
        }
        return output
    }
}
