import ArgumentParser
import ServiceRuntime

/// `attribution`: the command-line tool for ad networks and operators of the pipeline, its commands
/// grouped by who uses them. The benchmark's commands are another executable's (`attribution-bench`).
@main
struct AttributionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attribution",
        abstract: "The pipeline's tool: for ad networks, apps' backends, operators and test runs.",
        version: PipelineVersion.current,
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
                    AdminCommand.self, StatusCommand.self, StreamCommand.self, StoredCommand.self, LedgerCommand.self,
                    RedisACLCommand.self, CatalogCommand.self,
                ]),
            CommandGroup(name: "Test run", subcommands: [SimulateCommand.self, RelayCommand.self]),
        ]
    )
}
