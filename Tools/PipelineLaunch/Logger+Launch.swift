import Foundation
import Logging

extension Logger {
    /// The launcher's own Redis connections: errors only by default (a node being killed on purpose is
    /// not news); `TEST_LOG_LEVEL=debug` shows everything.
    public static func launch(_ label: String) -> Logger {
        var logger = Logger(label: label)
        logger.logLevel = launchLogLevel
        return logger
    }
}

private let launchLogLevel: Logger.Level = {
    guard let value = ProcessInfo.processInfo.environment["TEST_LOG_LEVEL"] else { return .error }
    return Logger.Level(rawValue: value.lowercased()) ?? .error
}()
