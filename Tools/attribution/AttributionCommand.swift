import ArgumentParser
import ServiceRuntime

/// `attribution`: the command-line tool for ad networks and operators of the pipeline, its commands
/// grouped by who uses them; the benchmark's own commands are left out of the top-level help.
@main
struct AttributionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attribution",
        abstract: "The pipeline's tool: for ad networks, apps' backends, operators and test runs.",
        discussion: """
            The benchmark's commands (bench-load, bench-holding, bench-coding; scripts/bench.sh runs them) \
            are not listed above: `attribution <command> --help` for each.
            """,
        version: PipelineVersion.current,
        subcommands: [BenchLoadCommand.self, BenchHoldingCommand.self, BenchCodingCommand.self],
        groupedSubcommands: [
            CommandGroup(
                name: "Ad network",
                subcommands: [
                    KeygenCommand.self, SignImpressionCommand.self, ReceiverCommand.self, VerifyPostbackCommand.self,
                    SummaryCommand.self,
                ]),
            CommandGroup(name: "App backend", subcommands: [CollectorCommand.self]),
            CommandGroup(
                name: "Operator",
                subcommands: [
                    AdminCommand.self, StatusCommand.self, LedgerCommand.self, RedisACLCommand.self, CatalogCommand.self,
                ]),
            CommandGroup(name: "Test run", subcommands: [SimulateCommand.self, LoadCommand.self, RelayCommand.self]),
        ]
    )
}
