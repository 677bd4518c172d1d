import AttributionModel
import Foundation
import ServiceRuntime
import Testing

/// The reference pages under docs/reference, each read against the code it describes: what the code
/// has must be on the page, and (where the page lists names) what the page lists must be in the code.
/// The configuration table is generated whole (ComposeFileTests); the HTTP API's source is the OpenAPI
/// document (OpenAPIDocumentTests).
@Suite("docs/reference ↔ the code")
struct ReferenceDocsTests {
    static func page(_ name: String) throws -> String { try ComposeFileTests.read("docs/reference/\(name)") }

    /// Backticked names in the first cell of each table row of `page`.
    static func firstColumnNames(_ page: String) -> Set<String> {
        var names: Set<String> = []
        for line in page.split(separator: "\n") where line.hasPrefix("| `") {
            let cell = line.dropFirst(2).prefix { $0 != "|" }
            names.formUnion(cell.matches(of: /`([a-z0-9_]+)`/).map { String($0.output.1) })
        }
        return names
    }

    @Test func everyReasonCodeIsInTheHTTPReference() throws {
        let page = try Self.page("http-api.md")
        for reason in ProblemReason.allCases {
            #expect(page.contains("`\(reason.rawValue)`"), "docs/reference/http-api.md does not name \(reason.rawValue)")
        }
    }

    /// Every metric name the services' code spells, and nothing else, in the metrics tables.
    @Test func theMetricsReferenceListsExactlyTheExportedMetrics() throws {
        let sources = try ComposeFileTests.swiftSources()
        let pattern = /"((?:ingest|admin|verifier|winner|scheduler|dispatcher|stage|pipeline|redis|build)_[a-z0-9_]+)"/
        let exported = Set(sources.matches(of: pattern).map { String($0.output.1) })
        #expect(exported.count > 20, "the metric names were found in the sources")
        let documented = Self.firstColumnNames(try Self.page("metrics.md"))
        #expect(
            exported.subtracting(documented).isEmpty, "exported, not documented: \(exported.subtracting(documented).sorted())")
        #expect(
            documented.subtracting(exported).isEmpty, "documented, not exported: \(documented.subtracting(exported).sorted())")
    }

    /// Every command of `attribution --help` and of `attribution admin --help` is on the tool's page.
    @Test func theToolReferenceNamesEveryCommand() throws {
        let page = try Self.page("attribution-tool.md")
        for arguments in [["--help"], ["admin", "--help"]] {
            let help = try OpenAPIDocumentTests.run(arguments, "attribution")
            let commands = help.split(separator: "\n").compactMap { line in
                line.wholeMatch(of: /\ \ ([a-z][a-z-]*)(?: .*)?/).map { String($0.output.1) }
            }
            #expect(commands.count >= 5, "read the commands of attribution \(arguments.joined(separator: " "))")
            for command in commands where command != "help" {
                #expect(page.contains("`\(command)"), "docs/reference/attribution-tool.md does not name \(command)")
            }
        }
    }

    /// Every stream, consumer group and delayed queue the services build (`attribution catalog --json`).
    @Test func theRedisKeysReferenceNamesEveryStreamGroupAndQueue() throws {
        let page = try Self.page("redis-keys.md")
        let catalog = try #require(
            try JSONSerialization.jsonObject(with: Data(try OpenAPIDocumentTests.run(["catalog", "--json"], "attribution").utf8))
                as? [String: Any])
        let streams = try #require(catalog["streams"] as? [String: String]).values
        let groups = try #require(catalog["groups"] as? [[String: Any]]).compactMap { $0["name"] as? String }
        let queues = try #require(catalog["queues"] as? [[String: Any]]).compactMap { $0["name"] as? String }
        #expect(!streams.isEmpty && !groups.isEmpty && !queues.isEmpty)
        for name in Array(streams) + queues {
            #expect(page.contains("`\(name):{p}`") || page.contains("`\(name)"), "redis-keys.md does not name \(name)")
        }
        for group in groups { #expect(page.contains("(`\(group)`)"), "redis-keys.md does not name the group \(group)") }
        #expect(page.contains("`<group>:attempts:{p}`") && page.contains("`<group>:dead:{p}`"))
    }

    /// A released version (no `-dev`) has its section in the changelog, in Keep a Changelog's form, below
    /// the section for what comes after it.
    @Test func theChangelogHasTheReleasedVersion() throws {
        let changelog = try ComposeFileTests.read("CHANGELOG.md")
        #expect(changelog.contains("\n## [Unreleased]\n"))
        guard !PipelineVersion.current.contains("-dev") else { return }
        let heading = try #require(
            changelog.firstMatch(of: /\n## \[([0-9]+\.[0-9]+\.[0-9]+)\] - [0-9]{4}-[0-9]{2}-[0-9]{2}\n/),
            "a release heading")
        #expect(String(heading.output.1) == PipelineVersion.current, "the latest release is the version the executables report")
    }
}
