import Hummingbird
import Synchronization

/// The routes a router serves, as method and path pattern, so a request for a known path with another
/// method is answered 405 `method-not-allowed` with `Allow` (RFC 9110 §15.5.6) rather than 404: the
/// router itself cannot tell "no such path" from "not with this method". Recorded once the routes are
/// added, read only on the refusal path.
public final class KnownRoutes: Sendable {
    private let routes = Mutex<[(segments: [Substring], method: String)]>([])

    public init() {}

    /// Remembers every route `router` has now.
    public func record(_ router: Router<some RequestContext>) {
        let described = router.routes.map { (segments: Self.segments("\($0.path)"), method: $0.method.rawValue) }
        routes.withLock { $0 = described }
    }

    /// The methods `path` is served with, sorted; empty when no route has this path.
    public func methods(for path: String) -> [String] {
        let request = Self.segments(String(path.split(separator: "?", maxSplits: 1).first ?? ""))
        let matching = routes.withLock { routes in
            routes.filter { Self.matches($0.segments, request) }.map(\.method)
        }
        return Set(matching).sorted()
    }

    static func segments(_ path: String) -> [Substring] {
        path.split(separator: "/", omittingEmptySubsequences: true)
    }

    /// A pattern segment matches itself, or any one segment when it is a capture (`:id`, `{id}`, `*`);
    /// `**` matches the rest.
    static func matches(_ pattern: [Substring], _ path: [Substring]) -> Bool {
        for (index, segment) in pattern.enumerated() {
            if segment == "**" { return true }
            guard index < path.count else { return false }
            let capture = segment.hasPrefix(":") || segment.hasPrefix("{") || segment == "*"
            if !capture, segment != path[index] { return false }
        }
        return pattern.count == path.count
    }
}
