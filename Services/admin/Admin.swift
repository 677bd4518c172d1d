import AttributionModel
import HTTPAPI
import Hummingbird
import RedisStreams
import ServiceRuntime

/// admin: the admin API behind the bearer token (ad networks and their credentials, publisher and
/// advertised apps, app keys, value schemas, device erasure, dead letters, test postbacks), with
/// `/metrics`, `/ready` and `/health`, on a listener of its own (`HTTP_HOST:HTTP_PORT`, default 8081)
/// and as a Redis user of its own: the only service that writes the registry. Keep it off the network
/// the public API faces. What its routes share with ingest's (the route catalog, request bodies, issued
/// secrets, JSON answers) is in `HTTPAPI`.
public enum Admin {
    public static let help = ServiceHelp(
        name: "admin",
        summary:
            "the admin API (registrations, keys, value schemas, device erasure, dead letters, test postbacks) behind ADMIN_TOKEN, with /metrics and the detailed /ready, on HTTP_PORT.",
        options: [.init("--routes", "print the routes admin serves and exit")])

    /// The admin service's listener, ready to run.
    public static func build(_ settings: AdminSettings, service: PipelineService) async throws -> PipelineService.Assembly {
        try await service.assemble(services: []) { router, redis in
            AdminRoutes(redis: redis, settings: settings).add(to: router, catalog: RouteCatalog())
        }
    }

    /// What a print-and-exit flag prints; nil for any other.
    public static func printed(_ flag: String) -> String? {
        guard flag == "--routes" else { return nil }
        let catalog = RouteCatalog()
        let redis = RedisConnection(configuration: RedisConfiguration(), logger: .init(label: "routes"))
        AdminRoutes(redis: redis, settings: AdminSettings(adminToken: "-", clock: { 0 })).add(to: Router(), catalog: catalog)
        return (catalog.routes + OperationsRoutes.routes).sorted().joined(separator: "\n")
    }
}
