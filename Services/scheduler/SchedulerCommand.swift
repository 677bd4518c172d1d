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
            // The stage's settings before Redis: a bad one stops the scheduler at once, not after it waited.
            let thresholds = try service.environment.value(.crowdTierThresholds)
            let grace = try service.environment.value(.windowCloseGraceMilliseconds)
            let crowdCache = CrowdCache(maxAge: .milliseconds(try service.environment.value(.crowdCacheMilliseconds)))
            let registryCache = RegistryCache(
                maxAge: .milliseconds(try service.environment.value(.registryCacheMilliseconds)))
            let identifiers = try await PostbackIdentifierKey.load(on: service.connection(), logger: service.logger)
            // One stage for every consumer loop: the crowd cache counts what each loop commits.
            let stage = SchedulerStage(
                step: SchedulerStep(
                    policy: service.policy, thresholds: thresholds, windowCloseGraceMilliseconds: Milliseconds(grace),
                    identifiers: identifiers),
                partitioning: service.partitioning, crowdCache: crowdCache, shardsCrowds: service.cluster,
                registryCache: registryCache, clock: service.clock)
            let attributions = try service.workers(stream: StreamNames.attributions, group: ConsumerGroups.scheduler) {
                stage
            }
            let timers = try service.workers(stream: StreamNames.schedulerTimers, group: ConsumerGroups.scheduler) { stage }
            try await service.run(
                services: attributions + timers + [
                    try service.timerLoop([DelayedQueues.windowTimers] + DelayedQueues.heldPostbacks)
                ])
        }
    }
}
