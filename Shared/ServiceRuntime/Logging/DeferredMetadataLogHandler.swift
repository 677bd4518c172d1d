import Logging

/// `StreamLogHandler` with the logger's metadata kept aside and rendered only when a message is
/// logged. Lines print exactly as they did.
///
/// `StreamLogHandler` renders its whole metadata to text on every change, and Hummingbird sets a request
/// id on every request's logger: at `LOG_LEVEL=warning` each request paid for text never printed (1.5 %
/// of ingest's CPU per single-event request, in `perf`).
struct DeferredMetadataLogHandler: LogHandler {
    private var stream: StreamLogHandler
    var metadata = Logger.Metadata()

    init(_ stream: StreamLogHandler) { self.stream = stream }

    var metadataProvider: Logger.MetadataProvider? {
        get { stream.metadataProvider }
        set { stream.metadataProvider = newValue }
    }

    var logLevel: Logger.Level {
        get { stream.logLevel }
        set { stream.logLevel = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var event = event
        // The message's own metadata wins over the logger's, as in StreamLogHandler.
        if !metadata.isEmpty { event.metadata = metadata.merging(event.metadata ?? [:]) { $1 } }
        stream.log(event: event)
    }
}
