import AttributionModel
import Delivery
import NIOCore
import ServiceRuntime

/// One POST of a postback body, after the destination policy (and DNS) allowed its URL and its
/// destination's lane (`DestinationLanes`) let it go: the answer as `DispatcherStep.Response`, which the
/// model's step judges (delivered, retried, dead-lettered), or `deferred` when the lane turned it away.
struct PostbackDelivery: Sendable {
    /// Connects to the checked address of a name, and to IP literals and allow-listed hosts as they are.
    let poster: PostbackPoster
    /// The whole attempt: connecting, sending and the answer.
    let timeout: TimeAmount
    let destinations: DestinationResolver
    let lanes: DestinationLanes

    static let headers = [("Content-Type", "application/json"), ("User-Agent", "attribution-pipeline-dispatcher")]

    enum Answer: Sendable {
        case answered(DispatcherStep.Response)
        /// Not attempted: its destination's circuit is open or its queue full; try again at `until`.
        case deferred(until: Milliseconds, reason: String)
    }

    /// POSTs `body` to `url` through its destination's lane. `slowLane` is called, before the attempt
    /// waits for a permit or an answer, when the destination is slow (`DestinationLanes.isSlow` past
    /// `answerWait`): whoever waits for the answer may then stop waiting.
    func post(_ body: String, to url: String, answerWait: Milliseconds, slowLane: @Sendable () -> Void) async -> Answer {
        // Parsed once: the check, DNS, the lane and the request target share it.
        let destination = DestinationPolicy.parse(url)
        let address: IPAddress?
        switch await destinations.resolve(destination) {
        case .refused(let refusal): return .answered(.refused(refusal))
        case .direct: address = nil
        case .pinned(_, let checked): address = checked
        }
        guard let destination, let endpoint = PostbackPoster.Endpoint(destination, address: address) else {
            return .answered(.transportError("not an http or https URL"))
        }
        let host = endpoint.host.contains(":") ? "[\(endpoint.host)]" : endpoint.host
        let lane = "\(endpoint.secure ? "https" : "http")://\(host):\(endpoint.port)"
        if await lanes.isSlow(lane, threshold: answerWait) { slowLane() }
        let ticket: Int
        switch await lanes.enter(lane) {
        case .wait(let until, let reason): return .deferred(until: until, reason: reason)
        case .permit(let granted): ticket = granted
        }
        let outcome = await poster.post(
            ByteBuffer(string: body), target: PostbackPoster.requestTarget(destination.pathAndQuery), to: endpoint,
            headers: Self.headers, timeout: timeout)
        let response: DispatcherStep.Response
        switch outcome {
        case .answered(let status): response = (200..<300).contains(status) ? .delivered : .status(status)
        case .failed(let reason): response = .transportError(reason)
        }
        await lanes.leave(lane, ticket: ticket, failed: response.showsTheDestinationDown)
        return .answered(response)
    }
}
