import AsyncHTTPClient
import AttributionModel
import Foundation
import NIOCore
import NIOHTTP1
import ServiceRuntime

/// One POST of a postback body. Success is any 2xx; any other status, a timeout or a connection
/// error is a failure, described for the retry record. A destination the policy forbids (http, a
/// private address) fails permanently: retrying cannot help, the record goes to the dead letters.
struct PostbackDelivery: Sendable {
    let client: HTTPClient
    let timeout: TimeAmount
    let destinations: DestinationResolver
    let limiter: HostLimiter

    struct Result: Sendable {
        var error: String?
        var permanent = false
        /// For the deliveries metric: delivered, http-error, transport-error, refused-destination.
        var outcome: String

        static let delivered = Result(error: nil, outcome: "delivered")
    }

    func post(_ body: String, to url: String) async -> Result {
        if let refusal = await destinations.check(url) {
            // An unresolvable name may be a passing DNS failure: retried like any other failure.
            return Result(error: refusal.rawValue, permanent: refusal != .unresolvable, outcome: "refused-destination")
        }
        let host = DestinationPolicy.parse(url).map { "\($0.host):\($0.port ?? 0)" } ?? url
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
                return (200..<300).contains(Int(response.status.code))
                    ? .delivered : Result(error: "HTTP \(response.status.code)", outcome: "http-error")
            } catch {
                return Result(error: "\(error)", outcome: "transport-error")
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
