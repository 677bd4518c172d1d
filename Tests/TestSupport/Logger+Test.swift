import Logging
import PipelineLaunch

extension Logger {
    /// A logger for tests, as quiet as the launcher's: errors only by default; set `TEST_LOG_LEVEL=debug`
    /// to see everything.
    public static func test(_ label: String) -> Logger { .launch(label) }
}
