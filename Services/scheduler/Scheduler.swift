import AttributionModel
import PipelineCatalog
import RedisStreams
import ServiceRuntime

/// scheduler: runs each conversion's postback plan (windows, updates, locks, tiers) and holds every
/// postback for its random delay before releasing it to `postbacks`. Its timer loops are safe to
/// replicate: moving a due item is one atomic script.
public enum Scheduler {
    public static let help = ServiceHelp(
        name: "scheduler",
        summary:
            "runs each conversion's three windows, value updates and locks, crowd tiers, and holds every postback for its random delay before releasing it to the dispatcher."
    )

    /// What the scheduler reads besides `PipelineSettings`.
    public struct Settings: Sendable {
        public var thresholds: CrowdTierThresholds
        public var windowCloseGraceMilliseconds: Milliseconds
        public var crowdCacheMilliseconds: Milliseconds
        public var registryCacheMilliseconds: Milliseconds

        public init(_ environment: ServiceEnvironment, _ common: PipelineSettings) throws(ConfigurationError) {
            thresholds = try environment.value(.crowdTierThresholds)
            windowCloseGraceMilliseconds = try environment.value(.windowCloseGraceMilliseconds)
            crowdCacheMilliseconds = try environment.value(.crowdCacheMilliseconds)
            registryCacheMilliseconds = try environment.value(.registryCacheMilliseconds)
        }
    }

    /// The consumer loops on `attributions` and on window timers, the timer loop of the window and
    /// held-postback queues, and the HTTP listener, ready to run. Reads (or makes) the postback
    /// identifier key in Redis first. `clock` is the stage's (wall clock by default).
    public static func build(
        _ settings: Settings, service: PipelineService, clock: (@Sendable () -> Milliseconds)? = nil
    ) async throws -> PipelineService.Assembly {
        let identifiers = try await PostbackIdentifierKey.load(on: service.connection(), logger: service.logger)
        // One stage for every consumer loop: the crowd cache counts what each loop commits.
        let stage = SchedulerStage(
            step: SchedulerStep(
                policy: service.policy, thresholds: settings.thresholds,
                windowCloseGraceMilliseconds: settings.windowCloseGraceMilliseconds, identifiers: identifiers),
            partitioning: service.partitioning, crowdCache: CrowdCache(maxAge: .milliseconds(settings.crowdCacheMilliseconds)),
            crowdRanks: CrowdRanks(
                connection: service.connection(), partitioning: service.partitioning, shardsCrowds: service.cluster,
                policy: service.policy, wallClock: { WallClock.nowMilliseconds() }),
            shardsCrowds: service.cluster,
            registryCache: RegistryCache(maxAge: .milliseconds(settings.registryCacheMilliseconds)),
            clock: clock ?? service.clock)
        let attributions = try service.workers(stream: StreamNames.attributions, group: ConsumerGroups.scheduler) { stage }
        let timers = try service.workers(stream: StreamNames.schedulerTimers, group: ConsumerGroups.scheduler) { stage }
        return try await service.assemble(
            services: attributions + timers + [
                try service.timerLoop([DelayedQueues.windowTimers] + DelayedQueues.heldPostbacks)
            ])
    }
}
