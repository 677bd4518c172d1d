import ArgumentParser

/// `attribution`: the command-line tool for ad networks and operators of the pipeline.
@main
struct AttributionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attribution",
        abstract: "Keys, signed impressions, a reference postback receiver and a traffic simulator.",
        subcommands: [
            KeygenCommand.self, SignImpressionCommand.self, ReceiverCommand.self, SummaryCommand.self,
            SimulateCommand.self, VerifyPostbackCommand.self, BenchHoldingCommand.self, CollectorCommand.self, StatusCommand.self,
            BenchLoadCommand.self,
        ]
    )
}
