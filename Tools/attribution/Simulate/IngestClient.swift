import AttributionModel
import Foundation
import NIOCore
import NIOHTTP1
import ToolSupport

/// The ingest API as the simulator calls it: every answer other than 2xx is an error carrying the
/// response body, which stops the run (after `retryFor` of retries, for failures worth retrying).
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

    let http: ToolHTTPClient
    /// Without a trailing slash.
    let baseURL: String
    /// The admin service's base URL (the admin API's paths go there), without a trailing slash.
    let adminURL: String
    let adminToken: String
    /// How long failures that are not the request's fault (no connection, 5xx, 429) are retried, under
    /// one `Idempotency-Key` so that a retried event is accepted once. Zero: the first failure stops.
    var retryFor: Duration = .zero
    /// Where each acknowledged event is written (the fault run's ledger starts from it).
    var acknowledgements: AcknowledgementLog?

    static let timeout: Duration = .seconds(30)
    static let maximumResponseSize = 1 << 20

    /// ingest's 202 answer to an event.
    struct Accepted: Decodable {
        let id: String
        enum CodingKeys: String, CodingKey { case id = "event-identifier" }
    }

    /// An admin registration (bearer: the admin token).
    func put(_ path: String, _ body: some Encodable) async throws {
        _ = try await send(.PUT, path, body, bearer: adminToken)
    }

    /// An event; conversions and updates carry the advertised app's key. Returns ingest's event id.
    @discardableResult
    func post(_ path: String, _ body: some Encodable, appKey: String? = nil, device: String) async throws -> String {
        let answer = try await send(.POST, path, body, bearer: appKey)
        let id = try JSONCoding.decoder.decode(Accepted.self, from: Data(buffer: answer)).id
        try await acknowledgements?.record(
            kind: String(path.split(separator: "/").last ?? ""), eventIdentifier: id, device: device)
        return id
    }

    /// Up to 1,000 events of one kind in one request (`…/batch`), each with its own `idempotency-key`;
    /// items answered 429 or 5xx are sent again (with their keys) for `retryFor`, any other refusal
    /// stops the run. Returns the event ids in order.
    @discardableResult
    func postBatch(_ path: String, _ items: [some Encodable], appKey: String? = nil, devices: [String]) async throws
        -> [String]
    {
        guard !items.isEmpty else { return [] }
        guard items.count <= BatchBody.maximumItems else {
            var ids: [String] = []
            for start in stride(from: 0, to: items.count, by: BatchBody.maximumItems) {
                let end = min(start + BatchBody.maximumItems, items.count)
                ids += try await postBatch(path, Array(items[start..<end]), appKey: appKey, devices: Array(devices[start..<end]))
            }
            return ids
        }
        var ids = [String?](repeating: nil, count: items.count)
        var bodies: [Data] = []
        for item in items {
            // The item's own JSON object with one more member: its key.
            var json = try JSONCoding.encoder.encode(item)
            json.removeLast()
            json.append(contentsOf: Data(#","idempotency-key":"\#(UUID().uuidString)"}"#.utf8))
            bodies.append(json)
        }
        let deadline = ContinuousClock.now + retryFor
        var pause = Duration.milliseconds(100)
        while true {
            let pending = ids.indices.filter { ids[$0] == nil }
            if pending.isEmpty { break }
            var body = Data("[".utf8)
            for (position, index) in pending.enumerated() {
                if position > 0 { body.append(UInt8(ascii: ",")) }
                body.append(bodies[index])
            }
            body.append(UInt8(ascii: "]"))
            let answer: BatchAnswer
            do {
                let bytes = try await attempt(
                    .POST, path, ByteBuffer(data: body), bearer: appKey, idempotencyKey: UUID().uuidString)
                answer = try JSONCoding.decoder.decode(BatchAnswer.self, from: Data(buffer: bytes))
            } catch let error as UnexpectedResponse where error.status < 500 && error.status != 429 {
                throw error
            } catch  where ContinuousClock.now < deadline {
                try await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(1))
                continue
            }
            var retry = false
            for (index, result) in zip(pending, answer.results) {
                if let id = result.id {
                    ids[index] = id
                    try await acknowledgements?.record(
                        kind: String(path.split(separator: "/").dropLast().last ?? ""), eventIdentifier: id,
                        device: devices[index])
                } else if result.status >= 500 || result.status == 429 {
                    retry = true
                } else {
                    throw UnexpectedResponse(
                        method: "POST", url: baseURL + path, status: result.status,
                        body: "item \(index): \(result.reason ?? "") \(result.detail ?? "")")
                }
            }
            if retry {
                guard ContinuousClock.now < deadline else {
                    throw UnexpectedResponse(
                        method: "POST", url: baseURL + path, status: 503, body: "items still refused after the retries")
                }
                try await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(1))
            }
        }
        return ids.map { $0! }
    }

    /// ingest's 200 answer to a batch.
    struct BatchAnswer: Decodable {
        struct Item: Decodable {
            var status: Int
            var id: String?
            var reason: String?
            var detail: String?
            enum CodingKeys: String, CodingKey {
                case status, reason, detail
                case id = "event-identifier"
            }
        }
        var results: [Item]
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
        let bytes = ByteBuffer(bytes: try JSONCoding.encoder.encode(body))
        let idempotencyKey = UUID().uuidString
        let deadline = ContinuousClock.now + retryFor
        var pause = Duration.milliseconds(100)
        while true {
            do {
                return try await attempt(method, path, bytes, bearer: bearer, idempotencyKey: idempotencyKey)
            } catch let error as UnexpectedResponse where error.status < 500 && error.status != 429 {
                throw error
            } catch  where ContinuousClock.now < deadline {
                try await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(1))
            }
        }
    }

    private func attempt(
        _ method: HTTPMethod, _ path: String, _ body: ByteBuffer, bearer: String?, idempotencyKey: String
    ) async throws -> ByteBuffer {
        let url = (path.hasPrefix("/v1/admin/") ? adminURL : baseURL) + path
        var headers = [("Content-Type", "application/json"), ("Idempotency-Key", idempotencyKey)]
        if let bearer { headers.append(("Authorization", "Bearer \(bearer)")) }
        let response: ToolHTTPClient.Response
        do {
            response = try await http.send(
                method, url, headers: headers, body: body, timeout: Self.timeout, maximumAnswerBytes: Self.maximumResponseSize)
        } catch {
            throw TransportError(method: method.rawValue, url: url, underlying: error)
        }
        guard (200..<300).contains(response.status) else {
            throw UnexpectedResponse(
                method: method.rawValue, url: url, status: response.status, body: String(buffer: response.body))
        }
        return response.body
    }
}

/// Every event ingest acknowledged (202), one JSON line each: `{"kind", "event-identifier", "device"}`.
actor AcknowledgementLog {
    private let handle: FileHandle

    init(path: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: nil) else {
            throw CommandError("cannot create \(path)")
        }
        handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    }

    func record(kind: String, eventIdentifier: String, device: String) throws {
        let line = try JSONSerialization.data(
            withJSONObject: ["kind": kind, "event-identifier": eventIdentifier, "device": device], options: [.sortedKeys])
        try handle.write(contentsOf: line + Data("\n".utf8))
    }

    func close() throws { try handle.close() }
}
