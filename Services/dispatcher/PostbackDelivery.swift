import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// One POST of a postback body. Success is any 2xx; any other status, a timeout or a connection
/// error is a failure, described for the retry record.
struct PostbackDelivery: Sendable {
    let client: HTTPClient
    let timeout: TimeAmount

    func post(_ body: String, to url: String) async -> String? {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "attribution-pipeline-dispatcher")
        request.body = .bytes(ByteBuffer(string: body))
        do {
            let response = try await client.execute(request, timeout: timeout)
            // Drain (bounded) so the pooled connection can be reused.
            _ = try? await response.body.collect(upTo: 64 * 1024)
            return (200..<300).contains(Int(response.status.code)) ? nil : "HTTP \(response.status.code)"
        } catch {
            return "\(error)"
        }
    }
}
