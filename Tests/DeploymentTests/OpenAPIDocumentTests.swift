import AttributionModel
import Foundation
import Testing

/// The OpenAPI document ingest serves lists exactly the routes ingest and admin register, and exactly
/// the reason codes of `ProblemReason`.
@Suite("OpenAPI document ↔ ingest's and admin's routes")
struct OpenAPIDocumentTests {
    static func binary(_ name: String) -> URL {
        if let path = ProcessInfo.processInfo.environment["PIPELINE_BIN_DIR"] {
            return URL(fileURLWithPath: path).appendingPathComponent(name)
        }
        return ComposeFileTests.root.appendingPathComponent(".build/debug/\(name)")
    }

    static func run(_ arguments: [String], _ service: String = "ingest") throws -> String {
        let process = Process()
        process.executableURL = binary(service)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    /// What ingest serves and prints is the file clients read, byte for byte (the string literal it is
    /// compiled from is written from the file by scripts/embed_openapi.py).
    @Test func ingestServesTheDocumentAsTheFileHoldsIt() throws {
        let file = ComposeFileTests.root.appendingPathComponent("Services/ingest/openapi.json")
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(try Self.run(["--openapi"]) == text, "stale: run scripts/embed_openapi.py")
    }

    @Test func everyRouteIsDocumentedAndEveryDocumentedRouteExists() throws {
        let lines = try Self.run(["--routes"]).split(separator: "\n").map(String.init)
        let suffix = " (operations listener)"
        let ingest = Set(lines.filter { !$0.hasSuffix(suffix) })
        let operations = Set(lines.filter { $0.hasSuffix(suffix) }.map { String($0.dropLast(suffix.count)) })
        let admin = Set(try Self.run(["--routes"], "admin").split(separator: "\n").map(String.init))
        let served = ingest.union(operations).union(admin)
        #expect(ingest.count > 10 && admin.count > 10, "ingest and admin --routes list their routes (are they built?)")
        #expect(operations == ["GET /metrics", "GET /ready", "GET /health", "HEAD /health"])
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(try Self.run(["--openapi"]).utf8)) as? [String: Any])
        #expect(document["openapi"] as? String == "3.1.0")
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        let methods: Set = ["get", "head", "put", "post", "delete", "patch"]
        var documented = Set<String>()
        for (path, item) in paths {
            for method in item.keys where methods.contains(method) { documented.insert("\(method.uppercased()) \(path)") }
        }
        #expect(served.subtracting(documented).isEmpty, "served but not documented: \(served.subtracting(documented).sorted())")
        #expect(documented.subtracting(served).isEmpty, "documented but not served: \(documented.subtracting(served).sorted())")

        // The routes ingest's public listener does not serve are exactly the path items whose `servers`
        // name the admin service (plus /health and /ready, served by every listener), and only the admin
        // API and /metrics are elsewhere; /metrics also names ingest's operations listener.
        let adminOnly = admin.subtracting(ingest)
        func onServer(_ prefix: String) -> Set<String> {
            var found = Set<String>()
            for (path, item) in paths {
                let servers = item["servers"] as? [[String: Any]] ?? []
                guard servers.contains(where: { ($0["description"] as? String)?.hasPrefix(prefix) == true }) else { continue }
                for method in item.keys where methods.contains(method) { found.insert("\(method.uppercased()) \(path)") }
            }
            return found
        }
        let onAdminServer = onServer("the admin service")
        #expect(
            adminOnly == onAdminServer,
            "admin-only routes ↔ documented admin servers: \(adminOnly.symmetricDifference(onAdminServer).sorted())")
        #expect(adminOnly.contains("GET /metrics") && adminOnly.allSatisfy { $0.contains("/v1/admin/") || $0 == "GET /metrics" })
        #expect(onServer("ingest's operations listener") == operations.subtracting(ingest))
    }

    /// A client generator names each operation by its `operationId` and groups them by tag: every
    /// operation has a unique id and one tag the document declares.
    @Test func everyOperationHasAUniqueIdAndADeclaredTag() throws {
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(try Self.run(["--openapi"]).utf8)) as? [String: Any])
        let declared = Set(((document["tags"] as? [[String: Any]]) ?? []).compactMap { $0["name"] as? String })
        #expect(declared == ["Events", "Ad networks", "Discovery", "Admin", "Operations"])
        var ids: [String] = []
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        for (path, item) in paths {
            for (method, operation) in item where ["get", "put", "post", "delete", "head", "patch"].contains(method) {
                let operation = try #require(operation as? [String: Any])
                let id = operation["operationId"] as? String
                #expect(id?.isEmpty == false, "\(method) \(path) has an operationId")
                ids += id.map { [$0] } ?? []
                let tags = operation["tags"] as? [String] ?? []
                #expect(tags.count == 1 && declared.contains(tags[0]), "\(method) \(path): \(tags)")
            }
        }
        #expect(Set(ids).count == ids.count && ids.count >= 44, "unique: \(ids.sorted())")
    }

    @Test func everyReferenceResolves() throws {
        let text = try Self.run(["--openapi"])
        let document = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        let components = try #require(document["components"] as? [String: [String: Any]])
        for match in text.matches(of: /"\$ref": "#\/components\/(\w+)\/(\w+)"/) {
            #expect(components[String(match.output.1)]?[String(match.output.2)] != nil, "\(match.output.0) resolves")
        }
    }

    /// An update's two shapes: AdAttributionKit's `PostbackUpdate` and SKAdNetwork's
    /// `updatePostbackConversionValue` arguments, each with the members ingest reads for it.
    @Test func valueUpdatesHaveBothShapes() throws {
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(try Self.run(["--openapi"]).utf8)) as? [String: Any])
        let schemas = try #require((document["components"] as? [String: Any])?["schemas"] as? [String: [String: Any]])
        let shapes = (schemas["ValueUpdateRequest"]?["oneOf"] as? [[String: String]])?.compactMap { $0["$ref"] }
        #expect(
            shapes == ["#/components/schemas/AdAttributionKitValueUpdate", "#/components/schemas/SKAdNetworkValueUpdate"])
        /// Its own members and those of the schemas it takes in with `allOf`.
        func members(_ schema: String) -> Set<String> {
            let included = (schemas[schema]?["allOf"] as? [[String: String]] ?? []).compactMap {
                $0["$ref"]?.split(separator: "/").last.map(String.init)
            }
            return included.reduce(Set((schemas[schema]?["properties"] as? [String: Any] ?? [:]).keys)) {
                $0.union(members($1))
            }
        }
        let common: Set = ["device-identifier", "advertised-item-identifier", "time"]
        #expect(members("SKAdNetworkValueUpdate") == common.union(["fineValue", "coarseValue", "lockWindow"]))
        #expect(
            members("AdAttributionKitValueUpdate")
                == common.union([
                    "fineConversionValue", "coarseConversionValue", "lockPostback", "conversionTypes", "conversionTag",
                ]))
        // `conversion-tag`, the spelling of the conversion's answer, is read too: said in `conversionTag`'s
        // description rather than as a member of its own, which a generated client could not name apart.
        let tag =
            ((schemas["AdAttributionKitValueUpdate"]?["properties"] as? [String: Any])?["conversionTag"]
            as? [String: Any])?["description"] as? String
        #expect(tag?.contains("`conversion-tag`") == true)
    }

    /// The test-postback request's schema has exactly the members the request type reads (every one set,
    /// encoded), less the identifiers ingest assigns; both routes take it and answer 429 past the limit.
    @Test func testPostbackRequestsAreDocumentedMemberByMember() throws {
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(try Self.run(["--openapi"]).utf8)) as? [String: Any])
        let schemas = try #require((document["components"] as? [String: Any])?["schemas"] as? [String: [String: Any]])
        let documented = Set((schemas["TestPostbackRequest"]?["properties"] as? [String: Any] ?? [:]).keys)
        let full = TestPostbackRequest(
            adNetworkIdentifier: AdNetworkIdentifier("a.b")!, tier: 3, conversionTag: "t", conversionValue: 1,
            coarseConversionValue: .low, countryCode: "DE", advertisedItemIdentifier: 1, sourceIdentifierDigits: 4,
            postbackIdentifiers: ["p"])
        let read = try #require(
            try JSONSerialization.jsonObject(with: JSONCoding.encoder.encode(full)) as? [String: Any])
        #expect(documented == Set(read.keys).subtracting(["postback-identifiers"]))
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        for path in ["/v1/ad-networks/{id}/test-postbacks", "/v1/admin/ad-networks/{id}/test-postbacks"] {
            let post = try #require(paths[path]?["post"] as? [String: Any], "\(path)")
            let responses = try #require(post["responses"] as? [String: Any])
            #expect(Set(responses.keys).isSuperset(of: ["202", "400", "401", "404", "429"]), "\(path)")
        }
    }

    /// The `enum` of the problem schema's `reason` and of the refusal lists' `reason`: together every
    /// `ProblemReason` and nothing else, each list exactly its channel's reasons.
    @Test func everyReasonIsListedAndEveryListedReasonIsAProblemReason() throws {
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(try Self.run(["--openapi"]).utf8)) as? [String: Any])
        let components = try #require(document["components"] as? [String: Any])
        let schemas = try #require(components["schemas"] as? [String: Any])
        func reasons(_ path: [String], in schema: String) throws -> [String] {
            var node = try #require(schemas[schema] as? [String: Any], "\(schema) is a schema")
            for key in path { node = try #require(node[key] as? [String: Any], "\(schema) has \(path)") }
            return try #require(node["enum"] as? [String], "\(schema)'s reason lists its values")
        }
        let problem = try reasons(["properties", "reason"], in: "Problem")
        let rejection = try reasons(["properties", "rejections", "items", "properties", "reason"], in: "Rejections")

        let listed = Set(problem + rejection)
        let cases = Set(ProblemReason.allCases.map(\.rawValue))
        #expect(listed.subtracting(cases).isEmpty, "listed but not a ProblemReason: \(listed.subtracting(cases).sorted())")
        #expect(
            cases.subtracting(listed).isEmpty, "a ProblemReason the document does not list: \(cases.subtracting(listed).sorted())"
        )
        #expect(problem == ProblemReason.appearing(in: .problemDetails).map(\.rawValue))
        #expect(rejection == ProblemReason.appearing(in: .rejection).map(\.rawValue))
    }
}
