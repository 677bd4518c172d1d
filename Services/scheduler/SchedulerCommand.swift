import AttributionModel
import RedisStreams
import ServiceRuntime

/// scheduler: runs each conversion's postback plan (windows, updates, locks, tiers) and holds every
/// postback for its random delay before releasing it to `postbacks`. Its timer loops are safe to
/// replicate: moving a due item is one atomic script.
@main
struct SchedulerCommand {
    static func main() async throws { try await PipelineService.exitingOnBadConfiguration(run) }

    static func run() async throws {
        let service = try PipelineService.bootstrap(name: "scheduler")
        let thresholds = try service.environment.value(.crowdTierThresholds)
        let grace = try service.environment.value(.windowCloseGraceMilliseconds)
        let stage = SchedulerStage(
            policy: service.policy, thresholds: thresholds, windowCloseGraceMilliseconds: Milliseconds(grace))
        try await service.run(
            services: [
                try service.worker(stage, stream: StreamNames.attributions, group: "scheduler"),
                try service.worker(stage, stream: StreamNames.schedulerTimers, group: "scheduler"),
                try service.timerLoop(SchedulerStage.windowTimers),
            ] + SchedulerStage.heldPostbacks.map { try service.timerLoop($0) })
    }
}
