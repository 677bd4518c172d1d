import AttributionModel
import ServiceRuntime

/// attribution-winner: keeps each device's impression pool and picks the winner and non-winners of
/// every conversion; routes value updates to their conversion.
@main
struct AttributionWinnerCommand {
    static func main() async throws {
        let service = try PipelineService.bootstrap(name: "attribution-winner")
        let stage = AttributionWinnerStage(policy: service.policy)
        try await service.run(
            defaultPort: 9090,
            services: [try service.worker(stage, stream: StreamNames.verified, group: "attribution-winner")])
    }
}
