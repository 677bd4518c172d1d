import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import RedisStreams

/// An HTTP/1.1 listener whose requests are served on their connection's event loop instead of Swift's
/// thread pool: a request is read, routed, handled and answered on the thread that parsed it, without
/// the hand-offs between threads that otherwise cost more than a small handler's own work. For
/// handlers that only compute and await; one that blocks a thread, or computes for milliseconds, stalls
/// every connection of that event loop.
public struct EventLoopHTTP1Channel: ServerChildChannel {
    public typealias Value = HTTP1Channel.Value

    let inner: HTTP1Channel
    let handler: (@Sendable () -> any ChannelHandler)?

    /// `Application(router:server:)`'s `server`, as `.http1(configuration:)` is. `handler` makes a
    /// handler for each connection, placed where it sees the decoded request parts (`HTTPRequestPart`)
    /// before Hummingbird does and the response parts (`HTTPResponsePart`) after: a fast path that answers
    /// some requests itself (see `EarlyRefusalHandler` for the rules such a handler keeps).
    public static func builder(
        configuration: HTTP1Channel.Configuration = .init(), handler: (@Sendable () -> any ChannelHandler)? = nil
    ) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in
            EventLoopHTTP1Channel(inner: HTTP1Channel(responder: responder, configuration: configuration), handler: handler)
        }
    }

    public func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        inner.setup(channel: channel, logger: logger).flatMapThrowing { [handler] value in
            guard let handler else { return value }
            // After the connection-state handler, so a request answered here still counts as activity for
            // the idle timeout and as a request for a graceful shutdown's close-after-response.
            let operations = channel.pipeline.syncOperations
            let state = try operations.handler(type: HTTPConnectionStateHandler.self)
            try operations.addHandler(handler(), position: .after(state))
            return value
        }
    }

    public func handle(value: Value, logger: Logger) async {
        await withTaskExecutorPreference(EventLoopTaskExecutor(value.channel.eventLoop)) {
            await inner.handle(value: value, logger: logger)
        }
    }
}

/// HTTP dates (RFC 9110 IMF-fixdate), as Hummingbird dates its answers, for responses written by a
/// channel handler rather than the router.
public enum HTTPDate {
    public static func now() -> String {
        var seconds = time(nil)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
