import ArgumentParser
import AttributionModel
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceRuntime
import ToolSupport

/// `attribution stream`: any of the pipeline's streams as JSON lines, every partition merged in entry
/// order, whatever form an entry's message is stored in; so that an operator, a data team or a script
/// reads a stream without a decoder of its own.
struct StreamCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stream",
        abstract: "Print a stream's entries as JSON lines, every partition merged in entry order (range, tail, follow).",
        discussion: """
            NAME is one of the pipeline's streams (\(StreamCatalog.names.joined(separator: ", "))), all its \
            partitions, or one partition's key (events:{p03}). Each entry is one line: {"stream", "entry", \
            "stored", "message"} with the message as its JSON envelope {type, id, time, schema, body} ("stored": \
            json, or the binary form release 0.1.0 wrote it in, compact or held-postback), "fields" with the \
            entry's other fields (a dead letter's error), and "undecodable" instead of "message" when the \
            entry holds none this version reads. Entries before attribution-winner name devices.
            """)

    @Argument(help: "The stream: a name above, or one partition's key.")
    var name: String

    @Option(help: "The first entry id (or milliseconds) to print; inclusive.")
    var from = "-"

    @Option(help: "The last entry id (or milliseconds) to print; inclusive.")
    var to = "+"

    @Option(help: "Only the newest N entries of the range, over all partitions.")
    var last: Int?

    @Flag(help: "After the range, keep printing entries as they are added, until interrupted.")
    var follow = false

    @Option(help: "While following: milliseconds between two looks at the stream.")
    var every = 500

    @OptionGroup var redis: RedisOptions

    func validate() throws {
        if let last, last < 0 { throw ValidationError("--last must be 0 or more") }
        guard every > 0 else { throw ValidationError("--every must be positive") }
        guard !follow || to == "+" else { throw ValidationError("--follow reads on past the end: leave --to out") }
    }

    func run() async throws {
        let connection = try redis.connect(label: "stream")
        do {
            try await self.print(on: connection)
        } catch {
            await connection.close()
            throw error
        }
        await connection.close()
    }

    private func print(on connection: RedisConnection) async throws {
        let keys = try await StreamCatalog.keys(of: name, on: connection)
        let reader = StreamReader(connection: connection, keys: keys)
        // Where following starts on each key: taken before the range is read, so that nothing added
        // meanwhile is missed, and moved on past whatever the range printed, so nothing comes twice.
        var positions = follow ? try await reader.tips() : [:]
        let printed: [StreamReader.Read]
        if let last {
            printed = try await reader.newest(last, from: from, to: to)
        } else {
            printed = []
            try await reader.range(from: from, to: to) { read in
                StreamLine.print(read)
                positions[read.key] = StreamReader.later(positions[read.key], read.entry.id)
            }
        }
        for read in printed {
            StreamLine.print(read)
            positions[read.key] = StreamReader.later(positions[read.key], read.entry.id)
        }
        guard follow else { return }
        while !Task.isCancelled {
            for read in try await reader.after(positions) {
                StreamLine.print(read)
                positions[read.key] = read.entry.id
            }
            try await Task.sleep(for: .milliseconds(every))
        }
    }
}

/// The streams a name stands for.
enum StreamCatalog {
    /// Every stream of the pipeline: the path's, the refusals and every dead-letter stream.
    static let streams: [PartitionedName] =
        [
            StreamNames.events, StreamNames.verified, StreamNames.rejected, StreamNames.conversionsSettled,
            StreamNames.attributions, StreamNames.schedulerTimers, StreamNames.postbacks,
        ] + PipelineSnapshot.deadLetterStreams

    static var names: [String] { streams.map(\.base) }

    /// The keys of `name`: every partition's of a stream of the catalog, or one partition's key as given.
    static func keys(of name: String, on connection: RedisConnection) async throws -> [String] {
        let partitioning = try await PartitionRecord.read(on: connection)
        if let stream = streams.first(where: { $0.base == name }) { return stream.all(partitioning) }
        let partitionKeys = streams.flatMap { $0.all(partitioning) }
        guard partitionKeys.contains(name) else {
            throw ValidationError("no stream \(name): name one of \(names.joined(separator: ", ")), or one partition's key")
        }
        return [name]
    }
}
