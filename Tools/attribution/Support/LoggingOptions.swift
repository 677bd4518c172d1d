import ArgumentParser
import Logging

/// `--log-level`, shared by the long-running subcommands. Logs go to stderr so stdout stays
/// machine-readable (JWK, JWS, reports).
struct LoggingOptions: ParsableArguments {
    @Option(help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "info"

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError(
                "--log-level must be one of trace, debug, info, notice, warning, error, critical; not \(logLevel)")
        }
    }

    /// Bootstraps swift-log once for the process and returns the tool's one logger.
    func makeLogger() -> Logger {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        var logger = Logger(label: "attribution")
        logger.logLevel = level
        return logger
    }
}
