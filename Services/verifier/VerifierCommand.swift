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
            var stage = VerifierStage(
                step: VerifierStep(policy: service.policy), partitioning: service.partitioning, claims: service.connection(),
                registryCache: RegistryCache(maxAge: .milliseconds(try service.environment.value(.registryCacheMilliseconds))))
            let threads = try service.environment.value(.verifierThreads)
            stage.lanes = threads > 0 ? threads : ProcessInfo.processInfo.activeProcessorCount
            try await service.run(
                services: [
                    try service.worker(
                        stage, stream: StreamNames.events, group: ConsumerGroups.verifier,
                        unreadOutputs: [StreamNames.rejected])
                ])
        }
    }
}
