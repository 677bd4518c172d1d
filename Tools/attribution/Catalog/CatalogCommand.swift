import ArgumentParser
import AttributionModel
import Foundation
import PipelineCatalog
import ServiceRuntime

/// `attribution catalog --json`: the Redis names and binary layouts the pipeline uses, from the code
/// that builds them (`RedisCatalog`, `Partitioning`, `CompactCoding`), so that scripts and other
/// clients read them instead of writing the rules again.
struct CatalogCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "catalog",
        abstract: "Print the pipeline's Redis names, partition hash tags and compact-coding key table.",
        discussion: """
            Prints one JSON object: "version"; "partitions" (count and each partition's hash tag, as the \
            services build them for PARTITIONS=count); "streams" (each stream's base name: the name in \
            partition p is <base>:<tag of p>); "groups" (each stage's consumer group, the streams it reads, \
            its attempts hash and dead-letter stream bases); "queues" (each delayed queue's base and the \
            stream it releases into); "compact-coding" (the magic and version bytes of stored blobs and \
            stream messages, and the key table: key number n is keys[n]); "held-postback-magic".
            """
    )

    @Flag(help: "Print JSON (the only form; required so that a later text form can be the default).")
    var json = false

    @Option(help: "Partitions to list tags for (the services' PARTITIONS).")
    var partitions = Partitioning.defaultCount

    func validate() throws {
        guard json else { throw ValidationError("--json is required") }
        guard (1...Partitioning.maximumCount).contains(partitions) else {
            throw ValidationError("--partitions must be within 1...\(Partitioning.maximumCount)")
        }
    }

    func run() throws {
        let partitioning = Partitioning(count: partitions)
        let streams: [String: String] = [
            "events": StreamNames.events.base, "verified": StreamNames.verified.base,
            "rejected": StreamNames.rejected.base, "conversions-settled": StreamNames.conversionsSettled.base,
            "attributions": StreamNames.attributions.base, "scheduler-timers": StreamNames.schedulerTimers.base,
            "postbacks": StreamNames.postbacks.base, "deliveries-dead": StreamNames.deliveriesDead.base,
        ]
        let groups = ConsumerGroups.all.map { group -> [String: Any] in
            [
                "name": group.name, "streams": group.streams.map(\.base), "attempts": group.attempts.base,
                "dead-letters": group.deadLetterStream.base,
            ]
        }
        let queues = DelayedQueues.all.map { ["name": $0.name, "releases-into": $0.target.base] }
        let catalog: [String: Any] = [
            "version": PipelineVersion.current,
            "partitions": ["count": partitions, "tags": partitioning.partitions.map(\.tag)],
            "streams": streams, "groups": groups, "queues": queues,
            "compact-coding": [
                "magic": Int(CompactCoding.magic), "version": Int(CompactCoding.version), "keys": CompactCoding.keyNames,
            ],
            "held-postback-magic": Int(CompactHeldPostback.magic),
        ]
        let data = try JSONSerialization.data(withJSONObject: catalog, options: [.sortedKeys, .withoutEscapingSlashes])
        print(String(decoding: data, as: UTF8.self))
    }
}
