import Foundation

/// The first executable called `name` on PATH.
public func findExecutable(_ name: String) -> URL? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
    for directory in path.split(separator: ":") {
        let candidate = URL(fileURLWithPath: String(directory)).appendingPathComponent(name)
        if FileManager.default.isExecutableFile(atPath: candidate.path) {
            return candidate
        }
    }
    return nil
}

/// Where `swift build` put the project's executables: PIPELINE_BIN_DIR (scripts/test.sh sets it), else
/// the repository's .build/debug.
public func builtExecutables() -> URL {
    if let path = ProcessInfo.processInfo.environment["PIPELINE_BIN_DIR"] { return URL(fileURLWithPath: path) }
    return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(".build/debug")
}
