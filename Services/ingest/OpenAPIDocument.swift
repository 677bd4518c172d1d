/// The OpenAPI 3.1 document of ingest's whole HTTP API (`openapi.json` beside this file, compiled in as
/// the string literal of `OpenAPIDocument+Text.swift`, which `scripts/embed_openapi.py` writes from it),
/// served at `/openapi.json` and printed by `ingest --openapi`. Tests hold it to the file, to the routes
/// ingest and admin really register (`--routes`), to every `ProblemReason` (each channel's `reason` enum,
/// in order) and to the request types it describes member by member; edit the file, and they say what
/// is stale. Path items only the admin service serves name it in `servers`.
enum OpenAPIDocument {}
