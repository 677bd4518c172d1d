import Foundation
import Logging

extension Logger {
    /// A logger for tests: errors only by default; set `TEST_LOG_LEVEL=debug` to see everything.
    public static func test(_ label: String) -> Logger {
        var logger = Logger(label: label)
        logger.logLevel = testLogLevel
        return logger
    }
}

private let testLogLevel: Logger.Level = {
    guard let value = ProcessInfo.processInfo.environment["TEST_LOG_LEVEL"] else { return .error }
    return Logger.Level(rawValue: value.lowercased()) ?? .error
}()
