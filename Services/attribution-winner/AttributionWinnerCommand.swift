import AttributionModel
import ServiceRuntime

/// attribution-winner: keeps each device's impression pool and picks the winner and non-winners of
/// every conversion; routes value updates to their conversion.
@main
struct AttributionWinnerCommand {
    static func main() async throws {
        let service = try PipelineService.bootstrap(name: "attribution-winner")
        let settle = try service.environment.int(.conversionSettleMilliseconds, default: 2_000, range: 0...3_600_000)
        func stage(_ input: WinnerStep.Input) -> AttributionWinnerStage {
            AttributionWinnerStage(
                step: WinnerStep(policy: service.policy, input: input, settleMilliseconds: Milliseconds(settle)),
                clock: service.clock)
        }
        try await service.run(
            defaultPort: 9090,
            services: [
                try service.worker(stage(.verified), stream: StreamNames.verified, group: ConsumerGroups.attributionWinner.name),
                try service.worker(
                    stage(.settled), stream: StreamNames.conversionsSettled, group: ConsumerGroups.attributionWinner.name),
                try service.timerLoop(DelayedQueues.settlingConversions),
            ])
    }
}
