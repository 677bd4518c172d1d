import Foundation

/// Where `swift build` put the project's executables: PIPELINE_BIN_DIR (scripts/test.sh sets it), else
/// the repository's .build/debug.
public func builtExecutables() -> URL {
    if let path = ProcessInfo.processInfo.environment["PIPELINE_BIN_DIR"] { return URL(fileURLWithPath: path) }
    return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(".build/debug")
}
