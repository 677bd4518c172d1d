import Hummingbird
import Synchronization

/// Registers routes and remembers them as "METHOD /path/{param}", so `ingest --routes` can list what the
/// server really serves and a test can hold the OpenAPI document to it.
final class RouteCatalog: Sendable {
    private let entries = Mutex<[String]>([])

    var routes: [String] { entries.withLock { $0 }.sorted() }

    func on<Methods: RouterMethods<BasicRequestContext>>(
        _ methods: Methods, prefix: String = "", _ method: HTTPRequest.Method, _ path: String,
        use handler: @escaping @Sendable (Request, BasicRequestContext) async throws -> Response
    ) {
        methods.on(RouterPath(path), method: method, use: handler)
        let openAPIPath = (prefix + path).split(separator: "/", omittingEmptySubsequences: false).map { part in
            part.hasPrefix(":") ? "{\(part.dropFirst())}" : String(part)
        }.joined(separator: "/")
        entries.withLock { $0.append("\(method.rawValue) \(openAPIPath)") }
    }
}
