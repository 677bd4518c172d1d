import AsyncHTTPClient
import Foundation
import NIOCore

/// Small JSON-over-HTTP helper for the end-to-end tests.
struct HTTPTestClient {
    let client = HTTPClient.shared

    struct Reply {
        let status: Int
        let body: Data
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body) as? [String: Any]) ?? [:] }
        var contentType: String?
        var retryAfter: String? = nil
        var allow: String? = nil
        var preferenceApplied: String? = nil
    }

    func send(_ method: String, _ url: String, json: Any? = nil, raw: String? = nil, token: String? = nil) async throws -> Reply {
        var request = HTTPClientRequest(url: url)
        request.method = .init(rawValue: method)
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: json)))
        } else if let raw {
            request.body = .bytes(ByteBuffer(string: raw))
        }
        let response = try await client.execute(request, timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 20)
        return Reply(
            status: Int(response.status.code), body: Data(body.readableBytesView),
            contentType: response.headers.first(name: "Content-Type"), retryAfter: response.headers.first(name: "Retry-After"),
            allow: response.headers.first(name: "Allow"))
    }

    /// Polls until `url` answers 200 (a service has started) or the timeout passes.
    func waitUntilUp(_ url: String, timeout: Duration = .seconds(30)) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let reply = try? await send("GET", url), reply.status == 200 { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }
}

/// A request with raw body and the headers the corpus varies.
struct HTTPClientRequestBuilder {
    var method: String
    var url: String
    var body: String
    var token: String? = nil
    var contentType: String? = nil
    var idempotencyKey: String? = nil
    var prefer: String? = nil
}

extension HTTPTestClient {
    func send(_ builder: HTTPClientRequestBuilder) async throws -> Reply {
        var request = HTTPClientRequest(url: builder.url)
        request.method = .init(rawValue: builder.method)
        if let token = builder.token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let contentType = builder.contentType { request.headers.add(name: "Content-Type", value: contentType) }
        if let key = builder.idempotencyKey { request.headers.add(name: "Idempotency-Key", value: key) }
        if let prefer = builder.prefer { request.headers.add(name: "Prefer", value: prefer) }
        request.body = .bytes(ByteBuffer(string: builder.body))
        let response = try await client.execute(request, timeout: .seconds(15))
        let body = try await response.body.collect(upTo: 1 << 20)
        return Reply(
            status: Int(response.status.code), body: Data(body.readableBytesView),
            contentType: response.headers.first(name: "Content-Type"), retryAfter: response.headers.first(name: "Retry-After"),
            allow: response.headers.first(name: "Allow"), preferenceApplied: response.headers.first(name: "Preference-Applied"))
    }
}
