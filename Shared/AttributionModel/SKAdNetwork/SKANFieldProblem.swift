/// A SKAdNetwork field that is missing, out of range, or present where its version does not sign it,
/// named by its JSON key so the sender can fix it.
public struct SKANFieldProblem: Error, Sendable, Hashable, CustomStringConvertible {
    /// The JSON key, e.g. `source-identifier`.
    public var key: String
    /// What is wrong, as the end of a sentence that starts with the key.
    public var problem: String

    public init(key: String, _ problem: String) {
        self.key = key
        self.problem = problem
    }

    public var description: String { "\(key) \(problem)" }
}
