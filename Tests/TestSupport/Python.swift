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
        let run = try ChildProcess.run(
            URL(fileURLWithPath: python3), arguments: ["-c", script] + arguments, input: Data(input.utf8))
        let errors = String(decoding: run.stderr, as: UTF8.self)
        if errors.contains("No module named 'cryptography'") {
            throw TestSupportError("python3 (\(python3)) lacks the `cryptography` package: pip install cryptography")
        }
        guard run.status == 0 else {
            throw TestSupportError("python3 exited with \(run.status): \(errors)")
        }
        return run.stdout
    }
}
