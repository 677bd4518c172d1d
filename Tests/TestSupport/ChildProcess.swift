import Foundation

/// Runs a program to its exit with `input` on stdin and both outputs collected: the tests' one way to
/// call a child (python3 with `cryptography`, the `attribution` tool).
public enum ChildProcess {
    public struct Result: Sendable {
        public var status: Int32
        public var stdout: Data
        public var stderr: Data
    }

    public static func run(_ executable: URL, arguments: [String], input: Data = Data()) throws -> Result {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        // Stdin from a file, not a pipe: a child that exits before reading must not SIGPIPE the test process.
        let inputFile = FileManager.default.temporaryDirectory.appendingPathComponent("stdin-\(UUID().uuidString)")
        try input.write(to: inputFile)
        defer { try? FileManager.default.removeItem(at: inputFile) }
        let output = Pipe()
        let errors = Pipe()
        process.standardInput = try FileHandle(forReadingFrom: inputFile)
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let stdout = output.fileHandleForReading.readDataToEndOfFile()
        let stderr = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stdout: stdout, stderr: stderr)
    }
}
