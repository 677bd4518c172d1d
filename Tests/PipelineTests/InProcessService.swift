import AdminService
import AttributionWinnerService
import DispatcherService
import Foundation
import IngestService
import Logging
import SchedulerService
import ServiceLifecycle
import ServiceRuntime
import Synchronization
import TestSupport
import VerifierService

/// A service built in this test process by its library's `build`, as its `@main` builds it (settings
/// read from the environment a child process would get), its group run in a task: for tests that need
/// the service's behaviour, not a process boundary (no signals, crashes, logs or `/metrics`).
final class InProcessService: Sendable {
    let name: String
    private let state = Mutex<(group: ServiceGroup?, stopped: Bool)>((nil, false))
    private let task = Mutex<Task<Void, Never>?>(nil)

    init(_ name: String, environment values: [String: String], log: URL) {
        self.name = name
        let task = Task { [self] in
            do {
                let assembly = try await Self.build(name, ServiceEnvironment(values), log: log)
                let run = self.state.withLock { state -> Bool in
                    state.group = assembly.group
                    return !state.stopped
                }
                guard run else { return }
                try await assembly.run()
            } catch {
                FileLogHandler.append("\(name) (in-process): stopped: \(error)", to: log)
            }
        }
        self.task.withLock { $0 = task }
    }

    /// The executable `name`'s settings and `build`.
    static func build(_ name: String, _ environment: ServiceEnvironment, log: URL) async throws
        -> PipelineService.Assembly
    {
        let settings = try PipelineSettings(name: name, environment: environment)
        var logger = Logger(label: name) { label in FileLogHandler(label: label, file: log) }
        logger.logLevel = settings.logLevel
        let service = PipelineService(settings: settings, logger: logger, stopsOnSignals: false)
        switch name {
        case "ingest": return try await Ingest.build(try IngestSettings(environment, settings), service: service)
        case "admin": return try await Admin.build(try AdminSettings(environment, settings), service: service)
        case "verifier": return try await Verifier.build(try Verifier.Settings(environment, settings), service: service)
        case "attribution-winner":
            return try await AttributionWinner.build(try AttributionWinner.Settings(environment, settings), service: service)
        case "scheduler": return try await Scheduler.build(try Scheduler.Settings(environment, settings), service: service)
        case "dispatcher": return try await Dispatcher.build(try Dispatcher.Settings(environment, settings), service: service)
        default: throw TestSupportError("no service \(name)")
        }
    }

    /// Shuts the group down as SIGTERM would (without waiting: `stop` is called from `defer`).
    func stop() {
        let group = state.withLock { state -> ServiceGroup? in
            state.stopped = true
            return state.group
        }
        if let group { Task { await group.triggerGracefulShutdown() } }
    }

    /// Shuts the group down and waits until it has stopped.
    func stopAndWait() async {
        stop()
        await task.withLock { $0 }?.value
    }
}

/// Log lines of an in-process service appended to its log file, as its process would write them.
struct FileLogHandler: LogHandler {
    let label: String
    let file: URL
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        let fields = all.sorted { $0.key < $1.key }.map { " \($0.key)=\($0.value)" }.joined()
        Self.append("\(Date()) \(event.level) \(label):\(fields) \(event.message)", to: file)
    }

    static let lock = Mutex(())

    static func append(_ line: String, to file: URL) {
        lock.withLock { _ in
            if !FileManager.default.fileExists(atPath: file.path) {
                _ = FileManager.default.createFile(atPath: file.path, contents: nil)
            }
            guard let handle = try? FileHandle(forWritingTo: file) else { return }
            handle.seekToEndOfFile()
            handle.write(Data((line + "\n").utf8))
            try? handle.close()
        }
    }
}
