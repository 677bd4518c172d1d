import Foundation

/// Human-facing notes go to stderr so stdout carries only the result a script would capture.
func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}
