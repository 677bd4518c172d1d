/// Redis could not be launched or driven (no redis-server, no free port, a node that would not start,
/// a cluster that did not agree in time).
public struct LaunchError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, with enough detail to fix the machine.
    public let description: String

    /// An error with its explanation.
    public init(_ description: String) {
        self.description = description
    }
}
