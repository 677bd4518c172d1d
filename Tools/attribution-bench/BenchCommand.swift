import ArgumentParser
import ServiceRuntime

/// `attribution-bench`: the benchmark's own tool (scripts/bench.sh and the benchmark scripts run it),
/// apart from the operators' `attribution`: a load generator, a stage's input preloaded onto its
/// stream, what holding postbacks costs Redis, what coding a stage's state costs the CPU, and the Redis
/// (one server or a cluster) a benchmark or fault run starts and drives.
@main
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attribution-bench",
        abstract: "The benchmark's tool: offered load, preloaded streams, held postbacks, state coding, a run's Redis.",
        version: PipelineVersion.current,
        subcommands: [
            LoadCommand.self, PreloadCommand.self, HoldingCommand.self, CodingCommand.self, TransportCommand.self,
            RedisLaunchCommand.self,
        ]
    )
}
