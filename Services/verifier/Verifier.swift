import AttributionModel
import Foundation
import PipelineCatalog
import ServiceRuntime

/// verifier: checks every event's signature and rules; valid ones go on to `verified`, the rest to
/// `rejected` with a reason code. Scale it with more replicas in the `verifier` group.
public enum Verifier {
    public static let help = ServiceHelp(
        name: "verifier",
        summary:
            "checks every event's signature and rules; valid ones go on to attribution-winner, the rest are refused with a reason code."
    )

    /// What the verifier reads besides `PipelineSettings`.
    public struct Settings: Sendable {
        /// Threads a batch's signature checks are split over (`VERIFIER_THREADS`; 0 is read as one per core).
        public var threads: Int
        /// How long a registry read is reused (`REGISTRY_CACHE_MS`).
        public var registryCacheMilliseconds: Milliseconds

        public init(_ environment: ServiceEnvironment, _ common: PipelineSettings) throws(ConfigurationError) {
            let threads = try environment.value(.verifierThreads)
            self.threads = threads > 0 ? threads : ProcessInfo.processInfo.activeProcessorCount
            registryCacheMilliseconds = try environment.value(.registryCacheMilliseconds)
        }
    }

    /// The verifier's consumer loops on `events` and its HTTP listener, ready to run.
    public static func build(_ settings: Settings, service: PipelineService) async throws -> PipelineService.Assembly {
        let cache = RegistryCache(maxAge: .milliseconds(settings.registryCacheMilliseconds))
        // Each consumer loop has its own stage: its replay claims go over its own connection.
        let workers = try service.workers(
            stream: StreamNames.events, group: ConsumerGroups.verifier, unreadOutputs: [StreamNames.rejected]
        ) {
            var stage = VerifierStage(
                step: VerifierStep(policy: service.policy), partitioning: service.partitioning,
                claims: service.connection(), registryCache: cache)
            stage.lanes = settings.threads
            return stage
        }
        return try await service.assemble(services: workers)
    }
}
