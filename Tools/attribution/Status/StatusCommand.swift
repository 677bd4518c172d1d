import ArgumentParser
import AttributionModel
import Foundation
import Logging
import PipelineCatalog
import RedisStreams
import ServiceRuntime
import ToolSupport

/// `attribution status`: the operator's one-screen view of where messages wait and why.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Streams, consumer groups (lag, pending, oldest pending), delayed queues and dead letters.")

    @OptionGroup var redis: RedisOptions

    @Flag(help: "Print the snapshot as JSON.")
    var json = false

    func run() async throws {
        let connection = try redis.connect(label: "status")
        let snapshot = try await PipelineSnapshot.read(
            on: connection, try await PartitionRecord.read(on: connection), at: WallClock.nowMilliseconds())
        await connection.close()
        if json {
            print(String(decoding: try JSONCoding.encoder.encode(snapshot), as: UTF8.self))
        } else {
            print(Self.render(snapshot))
        }
    }

    static func render(_ snapshot: PipelineSnapshot) -> String {
        func column(_ text: String, _ width: Int, right: Bool = false) -> String {
            let pad = String(repeating: " ", count: max(0, width - text.count))
            return right ? pad + text : text + pad
        }
        var lines = [
            column("stream", 22) + column("length", 9, right: true) + "  " + column("group", 20)
                + column("consumers", 10, right: true)
                + column("pending", 9, right: true) + column("lag", 9, right: true) + column("oldest pending", 16, right: true)
        ]
        for stream in snapshot.streams {
            let group = snapshot.groups.first { $0.stream == stream.name }
            lines.append(
                column(stream.name, 22) + column(String(stream.length), 9, right: true) + "  "
                    + column(group?.group ?? "-", 20) + column(group.map { String($0.consumers) } ?? "-", 10, right: true)
                    + column(group.map { String($0.pending) } ?? "-", 9, right: true)
                    + column(group?.lag.map(String.init) ?? "-", 9, right: true)
                    + column(group?.oldestPendingMilliseconds.map { duration(Int64($0)) } ?? "-", 16, right: true))
        }
        // Where a backlog sits: the partitions with unread entries, per group.
        for group in snapshot.groups where group.partitionLag.contains(where: { ($0 ?? 0) > 0 }) {
            let behind = group.partitionLag.enumerated().compactMap { index, lag in
                (lag ?? 0) > 0 ? "p\(index): \(lag!)" : nil
            }
            lines.append("  \(group.stream) (\(group.group)) unread by partition: " + behind.joined(separator: ", "))
        }
        lines += ["", column("delayed queue", 32) + column("items", 10, right: true) + "  next due"]
        for queue in snapshot.queues {
            let next = queue.nextDue.map { due in
                due <= snapshot.takenAt
                    ? "now (\(duration(snapshot.takenAt - due)) overdue)" : "in \(duration(due - snapshot.takenAt))"
            }
            lines.append(column(queue.label, 32) + column(String(queue.count), 10, right: true) + "  " + (next ?? "-"))
        }
        if !snapshot.nodes.isEmpty {
            lines += ["", column("redis node", 24) + column("role", 9) + column("health", 9) + "partitions"]
            for node in snapshot.nodes {
                lines.append(
                    column(node.address, 24) + column(node.role, 9) + column(node.health, 9)
                        + (node.partitions.isEmpty ? "-" : node.partitions.map(String.init).joined(separator: " ")))
            }
        }
        if !snapshot.openCircuits.isEmpty {
            lines += [
                "", column("open circuit", 40) + column("replica", 24) + column("failures", 9, right: true) + "  next probe",
            ]
            for report in snapshot.openCircuits {
                for circuit in report.circuits {
                    let probe = circuit.probeAt.map { at in
                        at <= snapshot.takenAt ? "now" : "in \(duration(at - snapshot.takenAt))"
                    }
                    lines.append(
                        column(circuit.destination, 40) + column(report.replica, 24)
                            + column(String(circuit.failures), 9, right: true) + "  " + (probe ?? "under way"))
                }
            }
        }
        lines += ["", column("dead letters", 32) + column("entries", 10, right: true)]
        for stream in snapshot.deadLetters {
            lines.append(column(stream.name, 32) + column(String(stream.length), 10, right: true))
        }
        return lines.joined(separator: "\n")
    }

    /// "850 ms", "12 s", "3 min 20 s", "5 h 2 min", "2 d 4 h".
    static func duration(_ milliseconds: Int64) -> String {
        let seconds = milliseconds / 1000
        switch seconds {
        case ..<1: return "\(milliseconds) ms"
        case ..<60: return "\(seconds) s"
        case ..<3_600: return "\(seconds / 60) min \(seconds % 60) s"
        case ..<86_400: return "\(seconds / 3_600) h \(seconds % 3_600 / 60) min"
        default: return "\(seconds / 86_400) d \(seconds % 86_400 / 3_600) h"
        }
    }
}
