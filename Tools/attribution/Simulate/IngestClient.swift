import AsyncHTTPClient
import AttributionModel
import Foundation
import NIOCore
import NIOHTTP1

/// The ingest API as the simulator calls it: every answer other than 2xx is an error carrying the
/// response body, which stops the run.
struct IngestClient: Sendable {
    struct UnexpectedResponse: Error, CustomStringConvertible {
        var method: String
        var url: String
        var status: Int
        var body: String
        var description: String { "\(method) \(url) answered \(status):\n\(body)" }
    }

    struct TransportError: Error, CustomStringConvertible {
        var method: String
        var url: String
        var underlying: any Error
        var description: String { "\(method) \(url) failed: \(underlying)" }
    }

    let http: HTTPClient
    /// Without a trailing slash.
    let baseURL: String
    let adminToken: String

    static let timeout: TimeAmount = .seconds(30)
    static let maximumResponseSize = 1 << 20

    /// An admin registration (bearer: the admin token).
    func put(_ path: String, _ body: some Encodable) async throws {
        _ = try await send(.PUT, path, body, bearer: adminToken)
    }

    /// An event; conversions and updates carry the advertised app's key.
    func post(_ path: String, _ body: some Encodable, appKey: String? = nil) async throws {
        _ = try await send(.POST, path, body, bearer: appKey)
    }

    /// Issues a key for the advertised app's conversions and updates.
    func issueAppKey(for item: ItemIdentifier) async throws -> String {
        struct Issued: Decodable {
            let key: String
            enum CodingKeys: String, CodingKey { case key = "app-key" }
        }
        let answer = try await send(.POST, "/v1/admin/advertised-apps/\(item)/keys", [String: String](), bearer: adminToken)
        return try JSONCoding.decoder.decode(Issued.self, from: Data(buffer: answer)).key
    }

    private func send(_ method: HTTPMethod, _ path: String, _ body: some Encodable, bearer: String?) async throws -> ByteBuffer {
        let url = baseURL + path
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "Content-Type", value: "application/json")
        if let bearer { request.headers.add(name: "Authorization", value: "Bearer \(bearer)") }
        request.body = .bytes(ByteBuffer(bytes: try JSONCoding.encoder.encode(body)))
        let response: HTTPClientResponse
        do {
            response = try await http.execute(request, timeout: Self.timeout)
        } catch {
            throw TransportError(method: method.rawValue, url: url, underlying: error)
        }
        let answer = try await response.body.collect(upTo: Self.maximumResponseSize)
        guard (200..<300).contains(response.status.code) else {
            throw UnexpectedResponse(
                method: method.rawValue, url: url, status: Int(response.status.code), body: String(buffer: answer))
        }
        return answer
    }
}
