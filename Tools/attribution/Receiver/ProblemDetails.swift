import AttributionModel
import Foundation
import Hummingbird

/// An RFC 9457 problem document with the pipeline's `reason` extension: the stable code a client
/// branches on, while `detail` is for people. Same `type` and `title` conventions as ingest's.
struct ProblemDetails: Codable, Sendable {
    var type: String
    var title: String
    var status: Int
    var detail: String
    var reason: String

    init(status: HTTPResponse.Status, reason: String, detail: String) {
        self.type = "https://attribution-pipeline.dev/problems/\(reason)"
        self.title = status.reasonPhrase
        self.status = status.code
        self.detail = detail
        self.reason = reason
    }

    var response: Response {
        JSONResponse.make(self, status: HTTPResponse.Status(code: status), contentType: "application/problem+json")
    }
}

/// JSON responses with the pipeline's one encoder (sorted keys, unescaped slashes).
enum JSONResponse {
    static func make(
        _ value: some Encodable, status: HTTPResponse.Status = .ok, contentType: String = "application/json"
    ) -> Response {
        // Our own plain Codable values always encode; an empty object is a safe fallback.
        let data = (try? JSONCoding.encoder.encode(value)) ?? Data("{}".utf8)
        return Response(
            status: status, headers: [.contentType: contentType],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }
}
