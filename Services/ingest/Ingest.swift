import AttributionModel
import Foundation
import HTTPAPI
import Hummingbird
import NIOPosix
import RedisStreams
import ServiceRuntime

/// ingest: the only service that listens to the outside world. It checks the shape of every input,
/// puts valid events on the `events` stream (202), refuses the rest with problem JSON, and serves the
/// pipeline's public keys, the OpenAPI document and the ad networks' own routes. `/metrics` and the
/// detailed `/ready` are on a second listener (`OPERATIONS_HTTP_HOST:OPERATIONS_HTTP_PORT`); the admin
/// API is another service (admin, in `AdminService`), so ingest's Redis user can write only events and
/// its own records.
///
/// `ingest --configuration-table` prints the configuration table of docs/reference/configuration.md; `ingest --routes` the routes
/// it serves; `ingest --openapi` its OpenAPI document.
public enum Ingest {
    public static let help = ServiceHelp(
        name: "ingest",
        summary:
            "the public HTTP API: impressions, conversions, value updates and activity in (202 once in Redis), the JWKS, the OpenAPI document and the ad networks' own routes on HTTP_PORT; /metrics and the detailed /ready on OPERATIONS_HTTP_PORT.",
        options: [
            .init("--configuration-table", "print the configuration table (docs/reference/configuration.md) and exit"),
            .init("--routes", "print the routes ingest serves and exit"),
            .init("--openapi", "print the OpenAPI document and exit"),
        ])

    /// The admission service, the public listener and the operations listener, ready to run.
    public static func build(_ settings: IngestSettings, service: PipelineService) async throws -> PipelineService.Assembly {
        let queue = publishQueue(service, settings)
        let appKeys = AppKeyOwners(redis: service.connection())
        let admission = Admission(
            limits: settings.limits, queue: queue, appKeys: appKeys, lagConnection: service.connection(),
            partitioning: service.partitioning, clock: settings.clock, logger: service.logger)
        return try await service.assemble(
            services: [admission],
            routes: { router, redis in
                router.add(middleware: RequestDurations())
                IngestRoutes.addPublic(
                    to: router, catalog: RouteCatalog(), redis: redis, settings: settings, queue: queue, appKeys: appKeys,
                    admission: admission)
            },
            publicServer: { [refusal = admission.earlyRefusal] http1, name in
                EarlyRefusalHTTP1Channel.builder(configuration: http1, serverName: name, refusal: refusal)
            })
    }

    /// The connections events are published over: on one server, event-loop connections spread over the
    /// HTTP server's loops (a request's round trip then wakes no other thread); on a cluster,
    /// connections with their own threads, which route by slot.
    static func publishQueue(_ service: PipelineService, _ settings: IngestSettings) -> PublishQueue {
        let (replicas, wait) = (settings.durability.replicas, settings.durability.timeoutMilliseconds)
        // Hummingbird's default group, which the listeners run on: one loop per core.
        let loops = Array(MultiThreadedEventLoopGroup.singleton.makeIterator())
        let count = settings.connections == 0 ? loops.count : settings.connections
        if service.cluster {
            return PublishQueue(
                script: EventPublisher.script, connections: (0..<count).map { _ in service.connection() },
                replicas: replicas, waitMilliseconds: wait, oneNode: false)
        }
        let connections = (0..<count).map {
            EventLoopRedisConnection(
                configuration: service.redisConfiguration, eventLoop: loops[$0 % loops.count], logger: service.logger)
        }
        return PublishQueue(script: EventPublisher.script, connections: connections, replicas: replicas, waitMilliseconds: wait)
    }

    /// What a print-and-exit flag prints; nil for any other.
    public static func printed(_ flag: String) -> String? {
        if flag == "--configuration-table" { return ConfigurationKey.markdownTable() }
        if flag == "--openapi" { return OpenAPIDocument.json }
        guard flag == "--routes" else { return nil }
        // Built exactly as the server builds them; the connections are lazy and never used here.
        let catalog = RouteCatalog()
        let redis = RedisConnection(configuration: RedisConfiguration(), logger: .init(label: "routes"))
        let settings = IngestSettings(maxBodyBytes: 1, signingKeyGrace: 0, clock: { 0 })
        let queue = PublishQueue(
            script: EventPublisher.script, connections: [redis], replicas: 0, waitMilliseconds: 0, oneNode: true)
        let appKeys = AppKeyOwners(redis: redis)
        IngestRoutes.addPublic(
            to: Router(), catalog: catalog, redis: redis, settings: settings, queue: queue, appKeys: appKeys,
            admission: Admission(
                limits: .init(), queue: queue, appKeys: appKeys, lagConnection: nil,
                partitioning: settings.partitioning, clock: { 0 }, logger: .init(label: "routes")))
        let front = (catalog.routes + OperationsRoutes.publicRoutes).sorted()
        let operations = OperationsRoutes.routes.sorted().map { $0 + IngestRoutes.operationsSuffix }
        return (front + operations).joined(separator: "\n")
    }
}

/// The public listener's routes.
enum IngestRoutes {
    /// How `ingest --routes` marks a route of its operations listener.
    static let operationsSuffix = " (operations listener)"

    static func addPublic(
        to router: Router<BasicRequestContext>, catalog: RouteCatalog, redis: RedisConnection, settings: IngestSettings,
        queue: PublishQueue, appKeys: AppKeyOwners, admission: Admission
    ) {
        EventRoutes(
            redis: redis, maxBodyBytes: settings.maxBodyBytes, maxBatchBodyBytes: settings.maxBatchBodyBytes,
            signingKeyGrace: settings.signingKeyGrace,
            publisher: EventPublisher(queue: queue, appKeys: appKeys, partitioning: settings.partitioning),
            admission: admission, outcomes: OutcomeWaits(redis: redis, partitioning: settings.partitioning),
            clock: settings.clock
        ).add(to: router, catalog: catalog)
        AdNetworkRoutes(redis: redis, partitioning: settings.partitioning, clock: settings.clock)
            .add(to: router, catalog: catalog)
        let document = Array(OpenAPIDocument.json.utf8)
        catalog.on(router, .get, "/openapi.json") { _, _ in JSONAnswer.bytes(document) }
    }
}
