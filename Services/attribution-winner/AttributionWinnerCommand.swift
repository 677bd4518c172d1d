import AttributionModel
import ServiceRuntime

/// attribution-winner: keeps each device's impression pool and picks the winner and non-winners of
/// every conversion; routes value updates to their conversion.
@main
struct AttributionWinnerCommand {
    static func main() async throws {
        try await PipelineService.main(
            ServiceHelp(
                name: "attribution-winner",
                summary:
                    "keeps each device's impression pool, picks the winner and up to five non-winners of every conversion (after it settles), and routes value updates and activity to their conversion."
            )
        ) { service in
            let configured = Milliseconds(try service.environment.value(.conversionSettleMilliseconds))
            let settle = ConversionWindows.settle(configured: configured, policy: service.policy)
            if settle < configured {
                service.logger.notice(
                    "CONVERSION_SETTLE_MS capped at half the first window",
                    metadata: [
                        "configured.ms": "\(configured)", "settle.ms": "\(settle)", "time.scale": "\(service.policy.scale)",
                    ])
            }
            func stage(_ input: WinnerStep.Input) -> AttributionWinnerStage {
                AttributionWinnerStage(
                    step: WinnerStep(policy: service.policy, input: input, settleMilliseconds: settle),
                    partitioning: service.partitioning, clock: service.clock)
            }
            let verified = try service.workers(stream: StreamNames.verified, group: ConsumerGroups.attributionWinner) {
                stage(.verified)
            }
            let settled = try service.workers(
                stream: StreamNames.conversionsSettled, group: ConsumerGroups.attributionWinner
            ) { stage(.settled) }
            try await service.run(services: verified + settled + [try service.timerLoop([DelayedQueues.settlingConversions])])
        }
    }
}
