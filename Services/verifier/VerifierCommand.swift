import AttributionModel
import Foundation
import ServiceRuntime

/// verifier: checks every event's signature and rules; valid ones go on to `verified`, the rest to
/// `rejected` with a reason code. Scale it with more replicas in the `verifier` group.
@main
struct VerifierCommand {
    static func main() async throws {
        try await PipelineService.main(
            ServiceHelp(
                name: "verifier",
                summary:
                    "checks every event's signature and rules; valid ones go on to attribution-winner, the rest are refused with a reason code."
            )
        ) { service in
            let threads = try service.environment.value(.verifierThreads)
            let cache = RegistryCache(maxAge: .milliseconds(try service.environment.value(.registryCacheMilliseconds)))
            // Each consumer loop has its own stage: its replay claims go over its own connection.
            let workers = try service.workers(
                stream: StreamNames.events, group: ConsumerGroups.verifier, unreadOutputs: [StreamNames.rejected]
            ) {
                var stage = VerifierStage(
                    step: VerifierStep(policy: service.policy), partitioning: service.partitioning,
                    claims: service.connection(), registryCache: cache)
                stage.lanes = threads > 0 ? threads : ProcessInfo.processInfo.activeProcessorCount
                return stage
            }
            try await service.run(services: workers)
        }
    }
}
