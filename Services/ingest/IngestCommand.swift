import AttributionModel
import Foundation
import ServiceRuntime

/// ingest: the only service that listens to the outside world. It checks the shape of every input,
/// puts valid events on the `events` stream (202), refuses the rest with problem JSON, and serves the
/// admin API and the pipeline's public keys.
@main
struct IngestCommand {
    static func main() async throws {
        if CommandLine.arguments.contains("--configuration-table") {
            print(ConfigurationKey.markdownTable())
            return
        }
        let service = try PipelineService.bootstrap(name: "ingest")
        let settings = try IngestSettings(service.environment)
        try await service.run(defaultPort: 8080, services: []) { router, redis in
            AdminRoutes(redis: redis, adminToken: settings.adminToken).add(to: router)
            EventRoutes(redis: redis, maxBodyBytes: settings.maxBodyBytes).add(to: router)
        }
    }
}

struct IngestSettings {
    let adminToken: String
    let maxBodyBytes: Int

    init(_ environment: ServiceEnvironment) throws {
        adminToken = try environment.required(.adminToken)
        maxBodyBytes = try environment.int(.maxBodyBytes, default: 65_536, range: 1_024...16_777_216)
    }
}
