import AttributionModel
import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import Metrics
import PipelineCatalog
import Prometheus
import RedisStreams
import ServiceLifecycle

/// What every executable shares at start: its settings, logging, metrics, Redis connections, and a
/// service group that stops everything in reverse order on SIGTERM or SIGINT. Building one has no
/// global effect (`bootstrap` is the process's one call that has), so tests build services in-process.
public struct PipelineService: Sendable {
    public let settings: PipelineSettings
    public let logger: Logger
    public let registry: PrometheusCollectorRegistry
    /// Whether the service group stops on SIGTERM and SIGINT: a service built in a test's process does
    /// not take the process's signals (the test shuts its group down).
    public let stopsOnSignals: Bool

    public var name: String { settings.name }
    public var policy: TimePolicy { settings.policy }
    public var redisConfiguration: RedisConfiguration { settings.redis }
    /// The deployment's partitions (`PARTITIONS`).
    public var partitioning: Partitioning { settings.partitioning }
    /// Whether Redis is a cluster (`REDIS_CLUSTER`): then a transaction stays in one partition.
    public var cluster: Bool { settings.cluster }

    /// `logger`: the process's (`bootstrap`) unless a test gives its own (an in-process service's log file).
    public init(
        settings: PipelineSettings, registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(),
        logger: Logger? = nil, stopsOnSignals: Bool = true
    ) {
        self.settings = settings
        self.logger = logger ?? Logger(label: settings.name)
        self.registry = registry
        self.stopsOnSignals = stopsOnSignals
    }

    /// A service's `main`: answers `--help` and `--version` from `help` (and refuses an unknown
    /// argument), reads every setting with `read` (the common ones, then the service's own) before
    /// anything connects, bootstraps logging and metrics, and runs `body`. Bad configuration ends the
    /// process with its one line (`configuration KEY: problem`) on standard error and exit status 2
    /// (any other error that stops the service: one line, status 1), where an error thrown out of
    /// `main` would crash with a backtrace.
    public static func main<Settings>(
        isolation: isolated (any Actor)? = #isolation, _ help: ServiceHelp,
        settings read: (ServiceEnvironment, PipelineSettings) throws -> Settings,
        _ body: (Settings, PipelineService) async throws -> Void
    ) async throws {
        help.answer()
        do {
            let environment = ServiceEnvironment()
            let common = try PipelineSettings(name: help.name, environment: environment)
            let service = bootstrap(common)
            let settings = try read(environment, common)
            try await refuseMismatchedTLS(common.redis, logger: service.logger)
            try await body(settings, service)
        } catch let error as ConfigurationError {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            exit(2)
        } catch {
            // Anything else that ends the service (its HTTP port taken, say): one line, not a crash backtrace.
            FileHandle.standardError.write(Data("\(help.name): stopped: \(error)\n".utf8))
            exit(1)
        }
    }

    /// A PING before anything starts: a server TLS refuses (its certificate's CA, name or dates, a
    /// client certificate it wants), or a TLS port behind a `redis://` URL, stops the service at start
    /// as bad configuration would. Only when three tries 300 ms apart all say so, so that a proxy that
    /// drops a connection while its Redis restarts does not pass for a TLS port. Any other failure
    /// (Redis not up yet) is left to the service, which retries.
    static func refuseMismatchedTLS(_ redis: RedisConfiguration, logger: Logger) async throws(ConfigurationError) {
        var refusal: RedisError?
        for attempt in 0..<3 {
            if attempt > 0 { try? await Task.sleep(for: .milliseconds(300)) }
            let connection = RedisConnection(configuration: redis, logger: logger)
            do {
                _ = try await connection.pipeline([RedisCommand("PING")])
                refusal = nil
            } catch let error as RedisError where error.code == .tlsFailed {
                refusal = error
            } catch {
                refusal = nil
            }
            await connection.close()
            guard refusal != nil else { return }
        }
        if let refusal { throw ConfigurationError(key: "REDIS_URL", problem: "\(redis.url): \(refusal.message)") }
    }

    /// Bootstraps logging and metrics for `settings`' service. Call once per process.
    public static func bootstrap(_ settings: PipelineSettings) -> PipelineService {
        let level = settings.logLevel
        let format = settings.logFormat
        LoggingSystem.bootstrap { label in
            switch format {
            case .text:
                var handler = DeferredMetadataLogHandler(StreamLogHandler.standardError(label: label))
                handler.logLevel = level
                return handler
            case .json:
                var handler = JSONLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
        }
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        // ingest answers in milliseconds: its request histogram starts at 0.5 ms, not the default 5 ms.
        factory.durationHistogramBuckets["ingest_request_duration_seconds"] = [
            .microseconds(500), .milliseconds(1), .milliseconds(2.5), .milliseconds(5), .milliseconds(10),
            .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
            .seconds(1), .seconds(2.5), .seconds(5), .seconds(10),
        ]
        MetricsSystem.bootstrap(factory)
        // Which build answers: 1, with the version and the revision the image was built from.
        Gauge(label: "build_info", dimensions: [("version", PipelineVersion.current), ("revision", PipelineVersion.revision)])
            .record(1)
        return PipelineService(settings: settings, registry: registry)
    }

    /// The services' clock: wall-clock milliseconds, handed to the stages (the steps take `now` as a value).
    public var clock: @Sendable () -> Milliseconds { { WallClock.nowMilliseconds() } }

    /// A new connection: each consumer loop and timer loop gets its own, so that one loop's blocking read
    /// never holds up another's commands on a shared socket.
    public func connection() -> RedisConnection {
        RedisConnection(configuration: redisConfiguration, logger: logger)
    }

    /// The standard worker configuration for a stage reading every partition of `stream` as `group`.
    public func workerConfiguration(stream: PartitionedName, group: ConsumerGroup) throws -> StageWorkerConfiguration {
        guard let worker = settings.worker else {
            throw ConfigurationError(key: "CONSUMER_NAME", problem: "\(name) runs no stage")
        }
        var configuration = StageWorkerConfiguration(
            group: group.name, consumer: worker.consumerName, partitions: group.partitions(of: stream, partitioning))
        configuration.partitionsShareTransactions = !cluster
        configuration.batchSize = worker.batchSize
        configuration.claimIdleMilliseconds = worker.claimIdleMilliseconds
        configuration.maxAttempts = worker.maxAttempts
        configuration.retentionMilliseconds = worker.retentionMilliseconds
        configuration.deadLetterRetentionMilliseconds = worker.deadLetterRetentionMilliseconds
        return configuration
    }

    /// A stage's consumer loop over every partition of `stream`; it also trims `unreadOutputs` (streams it
    /// writes that no group reads). With `loops` > 1 it is loop `loop` of this replica's consumer loops:
    /// its own consumer in the group (`CONSUMER_NAME/<loop>` past the first) reading every `loops`-th
    /// partition, so the loops never handle one device's events (one partition) out of order.
    public func worker<Stage: StreamStage>(
        _ stage: Stage, stream: PartitionedName, group: ConsumerGroup, unreadOutputs: [PartitionedName] = [],
        loop: Int = 0, loops: Int = 1
    ) throws -> StageWorker<Stage> {
        var configuration = try workerConfiguration(stream: stream, group: group)
        configuration.unreadOutputs = unreadOutputs.flatMap { $0.all(partitioning) }
        if loops > 1 {
            configuration.readPartitions = configuration.partitions.indices.filter { $0 % loops == loop }
            if loop > 0 { configuration.consumer += "/\(loop)" }
        }
        return StageWorker(
            configuration: configuration, stage: stage, connection: connection(), logger: logger, observer: StageMetrics())
    }

    /// A stage's consumer loops over every partition of `stream`: `CONSUMERS` of them (at most one per
    /// partition), each with the stage `stage()` returns (loops may share one: stages are `Sendable`), run
    /// as one service (in an array, for the callers' lists of services).
    public func workers<Stage: StreamStage>(
        stream: PartitionedName, group: ConsumerGroup, unreadOutputs: [PartitionedName] = [],
        _ stage: () throws -> Stage
    ) throws -> [StageService<Stage>] {
        let loops = min(settings.worker?.consumers ?? 1, partitioning.count)
        return [
            StageService(
                workers: try (0..<loops).map { loop in
                    try worker(stage(), stream: stream, group: group, unreadOutputs: unreadOutputs, loop: loop, loops: loops)
                })
        ]
    }

    /// One timer loop for every partition of each of `queues`: one pipeline per poll (a round trip per
    /// Redis node), however many queues and partitions; on one Redis, one script run per layout.
    public func timerLoop(_ queues: [PartitionedQueue]) throws -> DelayedQueueService {
        let poll = settings.timerPollMilliseconds
        return DelayedQueueService(
            pump: DelayedQueuePump(
                queues: queues.flatMap { $0.all(partitioning) }, together: !cluster, connection: connection(),
                pollMilliseconds: poll,
                clock: { WallClock.nowMilliseconds() }, logger: logger))
    }

    /// What a service runs, assembled: its services and HTTP listeners in one group, and the routers
    /// the listeners serve (tests drive them in-process).
    public struct Assembly {
        public let group: ServiceGroup
        /// The listener's router: with `routes` and, but for ingest, the operations routes.
        public let router: Router<BasicRequestContext>
        /// ingest's operations listener's router: `/metrics`, the detailed `/ready`, `/health`.
        public let operationsRouter: Router<BasicRequestContext>?
        let logger: Logger
        /// What runs once the group has stopped, and when it failed to run (the dispatcher's late outcomes).
        public var afterwards: @Sendable () async -> Void = {}

        /// Runs the group until one of its signals (or until the task is cancelled), then `afterwards`.
        public func run() async throws {
            do {
                try await group.run()
            } catch {
                await afterwards()
                throw error
            }
            await afterwards()
            logger.info("stopped")
        }
    }

    /// A listener's connections, from Hummingbird's HTTP/1.1 configuration and the server's name.
    public typealias PublicServer = @Sendable (HTTP1Channel.Configuration, String) -> HTTPServerBuilder

    /// The HTTP server (operations routes plus whatever `routes` adds) and `services`, in one group
    /// that stops on SIGTERM and SIGINT (unless `stopsOnSignals` is false: a test shuts it down).
    /// With an operations listener (ingest: `OPERATIONS_HTTP_HOST:OPERATIONS_HTTP_PORT`), that one serves
    /// `/metrics` and the detailed `/ready`, and the public one only `routes`, `/health` and a terse
    /// `/ready`, opening after the operations listener, so a client that saw it up can use both.
    /// `publicServer` builds the public listener's connections from Hummingbird's HTTP/1.1 configuration
    /// and the server's name (ingest's refuse some requests from their head alone); Hummingbird's HTTP/1.1
    /// server without it. Checks the partition count recorded in Redis first.
    public func assemble(
        services: [any Service],
        routes: @Sendable (Router<BasicRequestContext>, RedisConnection) throws -> Void = { _, _ in },
        publicServer: PublicServer? = nil
    ) async throws -> Assembly {
        let (host, port) = (settings.http.host, settings.http.port)
        let idle = settings.httpIdleTimeoutMilliseconds
        let separate = settings.operations
        let httpRedis = connection()
        try await PartitionRecord.check(partitioning, on: httpRedis, logger: logger)
        // Each router's routes, recorded once they are all added (405 for a known path, another method).
        var known: [(KnownRoutes, Router<BasicRequestContext>)] = []
        func router() -> Router<BasicRequestContext> {
            let router = Router()
            let routes = KnownRoutes()
            known.append((routes, router))
            router.add(middleware: ProblemMiddleware(known: routes))
            router.add(middleware: BodyDeadline.Middleware(timeout: .milliseconds(idle)))
            return router
        }
        func application(
            _ router: Router<BasicRequestContext>, _ host: String, _ port: Int, server: PublicServer? = nil,
            onRunning: (@Sendable () -> Void)? = nil
        )
            -> Application<RouterResponder<BasicRequestContext>>
        {
            let http1 = HTTP1Channel.Configuration(idleTimeout: .milliseconds(idle))
            return Application(
                router: router,
                server: server.map { $0(http1, name) } ?? .http1(configuration: http1),
                configuration: .init(address: .hostname(host, port: port), serverName: name),
                onServerRunning: { _ in onRunning?() }, logger: logger)
        }
        // Pipeline-wide gauges, read from Redis when /metrics is scraped.
        let gauges = SnapshotGauges(connection: connection(), partitioning: partitioning)
        let operations = router()
        OperationsRoutes.add(
            to: operations, redis: httpRedis, registry: registry,
            groups: services.flatMap { ($0 as? any ConsumerGroupService)?.consumerGroups ?? [] },
            beforeMetrics: { await gauges.refresh() })
        var listeners: [any Service]
        var front = operations
        if let separate {
            front = router()
            OperationsRoutes.addPublic(to: front, redis: httpRedis)
            try routes(front, httpRedis)
            let (operationsUp, signal) = AsyncStream<Void>.makeStream()
            listeners = [
                application(operations, separate.host, separate.port, onRunning: { signal.yield() }),
                OpensAfter(signal: operationsUp, service: application(front, host, port, server: publicServer)),
            ]
            logger.info(
                "operations listener", metadata: ["http.host": "\(separate.host)", "http.port": "\(separate.port)"])
        } else {
            try routes(operations, httpRedis)
            listeners = [application(operations, host, port, server: publicServer)]
        }
        for (routes, router) in known { routes.record(router) }
        logger.info(
            "starting",
            metadata: [
                "http.host": "\(host)", "http.port": "\(port)", "time.scale": "\(policy.scale)",
                "allocator": "\(Allocator.version.map { "jemalloc \($0)" } ?? "the system's")",
            ])
        let group = ServiceGroup(
            configuration: .init(
                services: services.map { .init(service: $0) } + [.init(service: gauges)] + listeners.map { .init(service: $0) },
                gracefulShutdownSignals: stopsOnSignals ? [.sigterm, .sigint] : [], logger: logger))
        return Assembly(
            group: group, router: front, operationsRouter: separate == nil ? nil : operations, logger: logger)
    }
}

/// Runs `service` once `signal` yields (and not at all if shutdown comes first).
struct OpensAfter: Service {
    let signal: AsyncStream<Void>
    let service: any Service

    func run() async throws {
        let signal = signal
        let opened = await cancelWhenGracefulShutdown {
            var iterator = signal.makeAsyncIterator()
            return await iterator.next() != nil
        }
        guard opened == true else { return }
        try await service.run()
    }
}

/// Wall-clock milliseconds: the services' only clock (rules and steps receive time as a parameter).
public enum WallClock {
    public static func nowMilliseconds() -> Milliseconds {
        Milliseconds((Date().timeIntervalSince1970 * 1000).rounded())
    }
}
