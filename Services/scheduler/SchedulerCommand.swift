import AttributionModel
import RedisStreams
import ServiceRuntime

/// scheduler: runs each conversion's postback plan (windows, updates, locks, tiers) and holds every
/// postback for its random delay before releasing it to `postbacks`. Its timer loops are safe to
/// replicate: moving a due item is one atomic script.
@main
struct SchedulerCommand {
    static func main() async throws {
        try await PipelineService.main(
            ServiceHelp(
                name: "scheduler",
                summary:
                    "runs each conversion's three windows, value updates and locks, crowd tiers, and holds every postback for its random delay before releasing it to the dispatcher."
            )
        ) { service in
            let thresholds = try service.environment.value(.crowdTierThresholds)
            let grace = try service.environment.value(.windowCloseGraceMilliseconds)
            let stage = SchedulerStage(
                step: SchedulerStep(
                    policy: service.policy, thresholds: thresholds, windowCloseGraceMilliseconds: Milliseconds(grace)),
                partitioning: service.partitioning,
                crowdCache: CrowdCache(maxAge: .milliseconds(try service.environment.value(.crowdCacheMilliseconds))),
                shardsCrowds: service.cluster,
                registryCache: RegistryCache(maxAge: .milliseconds(try service.environment.value(.registryCacheMilliseconds))),
                clock: service.clock)
            try await service.run(
                services: [
                    try service.worker(stage, stream: StreamNames.attributions, group: ConsumerGroups.scheduler),
                    try service.worker(stage, stream: StreamNames.schedulerTimers, group: ConsumerGroups.scheduler),
                    try service.timerLoop([DelayedQueues.windowTimers] + DelayedQueues.heldPostbacks),
                ])
        }
    }
}
