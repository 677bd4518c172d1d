import AttributionModel
import PipelineCatalog
import ServiceRuntime

/// attribution-winner: keeps each device's impression pool and picks the winner and non-winners of
/// every conversion; routes value updates to their conversion.
public enum AttributionWinner {
    public static let help = ServiceHelp(
        name: "attribution-winner",
        summary:
            "keeps each device's impression pool, picks the winner and up to five non-winners of every conversion (after it settles), and routes value updates and activity to their conversion."
    )

    /// What attribution-winner reads besides `PipelineSettings`.
    public struct Settings: Sendable {
        /// `CONVERSION_SETTLE_MS` as configured.
        public var configuredSettleMilliseconds: Milliseconds
        /// What a conversion waits: the configured time, capped at half the first window's scaled length.
        public var settleMilliseconds: Milliseconds

        public init(_ environment: ServiceEnvironment, _ common: PipelineSettings) throws(ConfigurationError) {
            configuredSettleMilliseconds = Milliseconds(try environment.value(.conversionSettleMilliseconds))
            settleMilliseconds = ConversionWindows.settle(configured: configuredSettleMilliseconds, policy: common.policy)
        }
    }

    /// The consumer loops on `verified` and on settled conversions, the settling queue's timer loop
    /// and the HTTP listener, ready to run. `clock` is the stages' (wall clock by default).
    public static func build(
        _ settings: Settings, service: PipelineService, clock: (@Sendable () -> Milliseconds)? = nil
    ) async throws -> PipelineService.Assembly {
        if settings.settleMilliseconds < settings.configuredSettleMilliseconds {
            service.logger.notice(
                "CONVERSION_SETTLE_MS capped at half the first window",
                metadata: [
                    "configured.ms": "\(settings.configuredSettleMilliseconds)", "settle.ms": "\(settings.settleMilliseconds)",
                    "time.scale": "\(service.policy.scale)",
                ])
        }
        func stage(_ input: WinnerStep.Input) -> AttributionWinnerStage {
            AttributionWinnerStage(
                step: WinnerStep(policy: service.policy, input: input, settleMilliseconds: settings.settleMilliseconds),
                partitioning: service.partitioning, clock: clock ?? service.clock)
        }
        let verified = try service.workers(stream: StreamNames.verified, group: ConsumerGroups.attributionWinner) {
            stage(.verified)
        }
        let settled = try service.workers(stream: StreamNames.conversionsSettled, group: ConsumerGroups.attributionWinner) {
            stage(.settled)
        }
        return try await service.assemble(
            services: verified + settled + [try service.timerLoop([DelayedQueues.settlingConversions])])
    }
}
