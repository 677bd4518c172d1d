import AttributionModel
import Foundation
import Hummingbird
import ServiceRuntime

extension Request {
    /// An event (or a batch item): the hot path, read by `PlainJSON` (JSONDecoder's answer whenever
    /// the JSON is not plain or the event is refused, so every refusal reads as it did).
    static func decodeEventJSON<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        do {
            return try PlainJSON.decode(T.self, from: data)
        } catch let error as DecodingError {
            throw ProblemDetails(RequestProblem(decoding: error, body: data))
        }
    }
}
