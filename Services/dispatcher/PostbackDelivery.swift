import AttributionModel
import Delivery
import NIOCore
import ServiceRuntime

/// One POST of a postback body, after the destination policy (and DNS) allowed its URL: the answer as
/// `DispatcherStep.Response`, which the model's step judges (delivered, retried, dead-lettered).
struct PostbackDelivery: Sendable {
    /// Connects to the checked address of a name, and to IP literals and allow-listed hosts as they are.
    let poster: PostbackPoster
    /// The whole attempt: connecting, sending and the answer.
    let timeout: TimeAmount
    let destinations: DestinationResolver
    let limiter: HostLimiter

    static let headers = [("Content-Type", "application/json"), ("User-Agent", "attribution-pipeline-dispatcher")]

    func post(_ body: String, to url: String) async -> DispatcherStep.Response {
        // Parsed once: the check, DNS, the host's permits and the request target share it.
        let destination = DestinationPolicy.parse(url)
        let address: IPAddress?
        switch await destinations.resolve(destination) {
        case .refused(let refusal): return .refused(refusal)
        case .direct: address = nil
        case .pinned(_, let checked): address = checked
        }
        guard let destination, let endpoint = PostbackPoster.Endpoint(destination, address: address) else {
            return .transportError("not an http or https URL")
        }
        return await limiter.withPermit(for: "\(endpoint.host):\(endpoint.port)") {
            let outcome = await poster.post(
                ByteBuffer(string: body), target: PostbackPoster.requestTarget(destination.pathAndQuery), to: endpoint,
                headers: Self.headers,
                timeout: timeout)
            switch outcome {
            case .answered(let status): return (200..<300).contains(status) ? .delivered : .status(status)
            case .failed(let reason): return .transportError(reason)
            }
        }
    }
}

/// At most `limit` requests in flight per destination host (per dispatcher process), so one slow
/// endpoint cannot take every connection and a recovered one is not flooded.
actor HostLimiter {
    let limit: Int
    private var inFlight: [String: Int] = [:]
    private var waiting: [String: [CheckedContinuation<Void, Never>]] = [:]

    init(limit: Int) { self.limit = max(1, limit) }

    func withPermit<T: Sendable>(for host: String, _ body: @Sendable () async -> T) async -> T {
        await acquire(host)
        let result = await body()
        release(host)
        return result
    }

    private func acquire(_ host: String) async {
        if inFlight[host, default: 0] < limit {
            inFlight[host, default: 0] += 1
            return
        }
        await withCheckedContinuation { waiting[host, default: []].append($0) }
    }

    private func release(_ host: String) {
        if var queue = waiting[host], !queue.isEmpty {
            let next = queue.removeFirst()
            waiting[host] = queue.isEmpty ? nil : queue
            next.resume()  // the permit passes straight to the next waiter
        } else {
            inFlight[host, default: 1] -= 1
            if inFlight[host] == 0 { inFlight[host] = nil }
        }
    }
}
