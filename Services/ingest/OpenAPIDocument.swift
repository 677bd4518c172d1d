/// The OpenAPI 3.1 document of ingest's whole HTTP API (`openapi.json` beside this file, compiled in),
/// served at `/openapi.json` and printed by `ingest --openapi`. Tests hold it to the routes ingest
/// really registers (`ingest --routes`), to every `ProblemReason` (each channel's `reason` enum, in
/// order) and to the request types it describes member by member; edit the file, and they say what is
/// stale. Path items only the admin service serves name it in `servers`.
enum OpenAPIDocument {
    /// The document as the file holds it, without its final newline.
    static let json: String = {
        let text = String(decoding: PackageResources.openapi_json, as: UTF8.self)
        return text.hasSuffix("\n") ? String(text.dropLast()) : text
    }()
}
