import Hummingbird
import Synchronization

/// Registers routes and remembers them as "METHOD /path/{param}", so `ingest --routes` and
/// `admin --routes` can list what the servers really serve and a test can hold the OpenAPI document to it.
public final class RouteCatalog: Sendable {
    private let entries = Mutex<[String]>([])

    public init() {}

    public var routes: [String] { entries.withLock { $0 }.sorted() }

    public func on<Methods: RouterMethods<BasicRequestContext>>(
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
