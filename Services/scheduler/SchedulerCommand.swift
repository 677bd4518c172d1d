import AttributionModel
import RedisStreams
import ServiceRuntime

/// scheduler: runs each conversion's postback plan (windows, updates, locks, tiers) and holds every
/// postback for its random delay before releasing it to `postbacks`. Its timer loops are safe to
/// replicate: moving a due item is one atomic script.
@main
struct SchedulerCommand {
    static func main() async throws {
        let service = try PipelineService.bootstrap(name: "scheduler")
        let thresholdsText = service.environment.string(.crowdTierThresholds) ?? "10,100,1000"
        guard let thresholds = CrowdTierThresholds(parsing: thresholdsText) else {
            throw ConfigurationError(
                key: ConfigurationKey.crowdTierThresholds.name, problem: "must be three ascending integers, got \(thresholdsText)"
            )
        }
        let grace = try service.environment.int(.windowCloseGraceMilliseconds, default: 10_000, range: 0...3_600_000)
        let stage = SchedulerStage(
            step: SchedulerStep(
                policy: service.policy, thresholds: thresholds, windowCloseGraceMilliseconds: Milliseconds(grace)),
            clock: service.clock)
        try await service.run(
            defaultPort: 9090,
            services: [
                try service.worker(stage, stream: StreamNames.attributions, group: ConsumerGroups.scheduler.name),
                try service.worker(stage, stream: StreamNames.schedulerTimers, group: ConsumerGroups.scheduler.name),
                try service.timerLoop(DelayedQueues.windowTimers),
            ] + DelayedQueues.heldPostbacks.map { try service.timerLoop($0) })
    }
}
