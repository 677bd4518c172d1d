import AttributionModel
import ServiceRuntime

/// verifier: checks every event's signature and rules; valid ones go on to `verified`, the rest to
/// `rejected` with a reason code. Scale it with more replicas in the `verifier` group.
@main
struct VerifierCommand {
    static func main() async throws { try await PipelineService.exitingOnBadConfiguration(run) }

    static func run() async throws {
        let service = try PipelineService.bootstrap(name: "verifier")
        let stage = VerifierStage(step: VerifierStep(policy: service.policy))
        try await service.run(
            services: [
                try service.worker(
                    stage, stream: StreamNames.events, group: ConsumerGroups.verifier.name, unreadOutputs: [StreamNames.rejected])
            ])
    }
}
