import AttributionModel
import ServiceRuntime

extension ProblemDetails {
    /// Any error of decoding or validating a request's body (an event, a test-postback request), as the
    /// problem its answer carries.
    public init(describing error: any Error) {
        switch error {
        case let problem as ProblemDetails: self = problem
        case let problem as RequestProblem: self.init(problem)
        default: self = .badRequest(.invalidJSON, "the body is not the JSON this route expects")
        }
    }
}
