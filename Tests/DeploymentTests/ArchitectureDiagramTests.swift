import Foundation
import PipelineCatalog
import ServiceRuntime
import Testing

/// The picture in docs/architecture.md (a Mermaid flowchart) against the code: the services Package.swift
/// builds, the streams and delayed queues of the Redis catalog, which stage reads which stream (its
/// consumer group) and where each delayed queue releases its items. The chart is read with a strict
/// grammar (one node or one edge a line), so a line Mermaid would draw differently fails here too.
@Suite("Architecture diagram ↔ services and streams")
struct ArchitectureDiagramTests {
    enum Shape: Equatable { case service, stream, queue, registry, outside }

    struct Chart {
        var nodes: [String: (shape: Shape, label: String)] = [:]
        var edges: Set<[String]> = []

        func labels(_ shape: Shape) -> Set<String> { Set(nodes.values.filter { $0.shape == shape }.map(\.label)) }
        func node(labelled label: String) -> String? { nodes.first { $0.value.label == label }?.key }
        func hasEdge(from: String, to: String) -> Bool {
            guard let from = node(labelled: from), let to = node(labelled: to) else { return false }
            return edges.contains([from, to])
        }
    }

    static func chart() throws -> Chart {
        let page = try ComposeFileTests.read("docs/architecture.md")
        let blocks = page.components(separatedBy: "```mermaid\n").dropFirst()
        let source = try #require(blocks.first?.components(separatedBy: "\n```").first, "a mermaid block")
        var lines = source.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(lines.removeFirst() == "flowchart LR")
        let shapes: [(Shape, Regex<(Substring, Substring, Substring)>)] = [
            (.stream, /^(\w+)\[\("([^"]+)"\)\]$/), (.queue, /^(\w+)\{\{"([^"]+)"\}\}$/),
            (.registry, /^(\w+)\[\/"([^"]+)"\/\]$/), (.outside, /^(\w+)\(\["([^"]+)"\]\)$/),
            (.service, /^(\w+)\[([\w-]+)\]$/),
        ]
        var chart = Chart()
        for line in lines {
            if let edge = line.wholeMatch(of: /(\w+) (?:-->|-\.->)(?:\|[^|]+\|)? (\w+)/) {
                let (from, to) = (String(edge.output.1), String(edge.output.2))
                #expect(chart.nodes[from] != nil && chart.nodes[to] != nil, "\(line): nodes are declared before edges")
                chart.edges.insert([from, to])
            } else if let (shape, match) = shapes.lazy.compactMap({ shape, regex in
                line.wholeMatch(of: regex).map { (shape, $0) }
            }).first {
                chart.nodes[String(match.output.1)] = (shape, String(match.output.2))
            } else {
                Issue.record("not a node or an edge of the diagram's grammar: \(line)")
            }
        }
        return chart
    }

    @Test func everyServiceAndNothingElseIsABox() throws {
        let tools: Set = ["attribution", "attribution-bench"]
        #expect(try Self.chart().labels(.service) == ComposeFileTests.executables().subtracting(tools))
    }

    @Test func theStreamsAndQueuesAreTheCatalogs() throws {
        let chart = try Self.chart()
        let streams = Set(PipelineSnapshot.streams.map(\.stream.base) + [StreamNames.deliveriesDead.base])
        #expect(chart.labels(.stream) == streams)
        #expect(chart.labels(.queue) == Set(DelayedQueues.all.map(\.name)))
    }

    @Test func eachStageReadsItsGroupsStreamsAndEachQueueReleasesIntoItsTarget() throws {
        let chart = try Self.chart()
        for group in ConsumerGroups.all {
            for stream in group.streams {
                let drawn = chart.hasEdge(from: stream.base, to: group.name)
                #expect(drawn, "an arrow \(stream.base) → \(group.name)")
            }
        }
        for queue in DelayedQueues.all {
            let drawn = chart.hasEdge(from: queue.name, to: queue.target.base)
            #expect(drawn, "an arrow \(queue.name) → \(queue.target.base)")
        }
        // Nothing reads a stream the catalog gives no group, and every stream has a writer.
        let read = Set(ConsumerGroups.all.flatMap { group in group.streams.map { [$0.base, group.name] } })
        for edge in chart.edges {
            guard let from = chart.nodes[edge[0]], let to = chart.nodes[edge[1]], from.shape == .stream else { continue }
            #expect(to.shape == .service && read.contains([from.label, to.label]), "\(from.label) → \(to.label)")
        }
        for (id, node) in chart.nodes where node.shape == .stream {
            #expect(chart.edges.contains { $0[1] == id }, "something writes \(node.label)")
        }
    }
}
