import ArgumentParser
import ServiceRuntime

/// `attribution-bench`: the benchmark's own tool (scripts/bench.sh and the benchmark scripts run it),
/// apart from the operators' `attribution`: a load generator, a stage's input preloaded onto its
/// stream, what holding postbacks costs Redis, and what coding a stage's state costs the CPU.
@main
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attribution-bench",
        abstract: "The benchmark's tool: offered load, preloaded streams, held postbacks, state coding.",
        version: PipelineVersion.current,
        subcommands: [LoadCommand.self, PreloadCommand.self, HoldingCommand.self, CodingCommand.self]
    )
}
