/// A fixture could not be set up (no redis-server, no free port, a child that would not start).
public struct TestSupportError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, with enough detail to fix the machine.
    public let description: String

    /// An error with its explanation.
    public init(_ description: String) {
        self.description = description
    }
}
