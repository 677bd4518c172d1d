import AttributionModel
import Foundation
import Hummingbird
import ServiceRuntime

extension Request {
    /// Collects at most `limit` bytes (413 beyond) and decodes them, answering 400 with the decoder's
    /// complaint in plain words when the JSON does not fit.
    func decodeJSON<T: Decodable>(_ type: T.Type, limit: Int) async throws -> T {
        try Self.decodeJSON(type, from: try await collectBody(limit: limit))
    }

    /// The body, at most `limit` bytes (413 beyond).
    func collectBody(limit: Int) async throws -> Data {
        do {
            return Data(try await body.collect(upTo: limit).readableBytesView)
        } catch {
            throw ProblemDetails(.contentTooLarge, reason: "body-too-large", detail: "bodies are limited to \(limit) bytes")
        }
    }

    static func decodeJSON<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        do {
            return try JSONDecoder().decode(T.self, from: data)
        } catch let error as DecodingError {
            throw ProblemDetails.badRequest("invalid-json", error.plainDescription)
        }
    }
}
