import AttributionModel
import Foundation
import Hummingbird
import ServiceRuntime

extension Request {
    /// Collects at most `limit` bytes (413 beyond) and decodes them, answering 400 with the decoder's
    /// complaint in plain words when the JSON does not fit.
    public func decodeJSON<T: Decodable>(_ type: T.Type, limit: Int) async throws -> T {
        try Self.decodeJSON(type, from: try await collectBody(limit: limit))
    }

    /// The body, at most `limit` bytes: 413 beyond, 408 when it does not arrive in time, 400 when it
    /// cannot be read (a malformed chunk, an unsupported transfer coding).
    public func collectBody(limit: Int) async throws -> Data {
        do {
            return Data(try await BodyDeadline.collect(body, upTo: limit).readableBytesView)
        } catch let error as any HTTPResponseError where error.status == .contentTooLarge {
            throw ProblemDetails(.contentTooLarge, reason: .bodyTooLarge, detail: "bodies are limited to \(limit) bytes")
        } catch is BodyDeadline.Expired {
            throw ProblemDetails(.requestTimeout, reason: .bodyTimeout, detail: "the body did not arrive in time")
        } catch {
            throw ProblemDetails.badRequest(.invalidBody, "the body could not be read: \(error)")
        }
    }

    public static func decodeJSON<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        do {
            return try JSONDecoder().decode(T.self, from: data)
        } catch let error as DecodingError {
            throw ProblemDetails(RequestProblem(decoding: error, body: data))
        }
    }

}
