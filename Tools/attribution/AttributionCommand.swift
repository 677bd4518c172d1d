import ArgumentParser
import ServiceRuntime

/// `attribution`: the command-line tool for ad networks and operators of the pipeline.
@main
struct AttributionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attribution",
        abstract:
            "Keys, signed impressions, the reference receiver and collector, a traffic simulator, status and benchmarks.",
        version: PipelineVersion.current,
        subcommands: [
            KeygenCommand.self, RedisACLCommand.self, SignImpressionCommand.self, ReceiverCommand.self, SummaryCommand.self,
            SimulateCommand.self, VerifyPostbackCommand.self, BenchHoldingCommand.self, BenchCodingCommand.self,
            CollectorCommand.self, StatusCommand.self,
            BenchLoadCommand.self, LoadCommand.self, LedgerCommand.self, RelayCommand.self, CatalogCommand.self,
        ]
    )
}
