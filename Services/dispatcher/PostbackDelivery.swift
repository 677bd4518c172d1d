import AsyncHTTPClient
import AttributionModel
import Delivery
import Foundation
import NIOCore
import NIOHTTP1
import ServiceRuntime

/// One POST of a postback body, after the destination policy (and DNS) allowed its URL: the answer as
/// `DispatcherStep.Response`, which the model's step judges (delivered, retried, dead-lettered).
struct PostbackDelivery: Sendable {
    /// For destinations used as they are (IP literals, allow-listed hosts).
    let client: HTTPClient
    /// For names: a client that connects only to the address the check approved.
    let pinned: PinnedClients
    let timeout: TimeAmount
    let destinations: DestinationResolver
    let limiter: HostLimiter

    func post(_ body: String, to url: String) async -> DispatcherStep.Response {
        let client: HTTPClient
        let destination = DestinationPolicy.parse(url)  // once: the check, DNS and the host's permits share it
        switch await destinations.resolve(destination) {
        case .refused(let refusal): return .refused(refusal)
        case .direct: client = self.client
        case .pinned(let name, let address): client = pinned.client(for: name, address: address)
        }
        let host = destination.map { "\($0.host):\($0.port ?? 0)" } ?? url
        return await limiter.withPermit(for: host) {
            var request = HTTPClientRequest(url: url)
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.headers.add(name: "User-Agent", value: "attribution-pipeline-dispatcher")
            request.body = .bytes(ByteBuffer(string: body))
            do {
                let response = try await client.execute(request, timeout: timeout)
                // Drain (bounded) so the pooled connection can be reused.
                _ = try? await response.body.collect(upTo: 64 * 1024)
                return (200..<300).contains(Int(response.status.code)) ? .delivered : .status(Int(response.status.code))
            } catch {
                return .transportError("\(error)")
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
