import Foundation
import Testing

/// Sends a document's examples to running services, one operation at a time, and holds each answer to
/// the example its request names (`OpenAPIExampleTests` says how they pair). What the services hand
/// out (an app key, a network credential, ids to revoke or replay) is kept for the operations after.
final class OpenAPIExampleRun {
    let services: PipelineProcesses
    let document: OpenAPIExampleDocument
    let http = HTTPTestClient()
    var freshening: OpenAPIExampleFreshening
    /// Security scheme → bearer token.
    var tokens: [String: String]
    /// Path parameters handed out during the run: `key`, `credential`, `dead-letter`.
    var handedOut: [String: String] = [:]
    /// The ids of the events the event routes accepted.
    var events: [String] = []
    /// Each operation's last JSON answer.
    var answers: [String: JSONTree] = [:]

    init(services: PipelineProcesses, document: OpenAPIExampleDocument) {
        self.services = services
        self.document = document
        let requests = document.examples().filter { $0.place == "request" }.map(\.value)
        freshening = OpenAPIExampleFreshening(latestExampleTime: OpenAPIExampleFreshening.latestTime(in: requests))
        tokens = ["adminToken": services.adminToken]
    }

    /// Each request example of `operation` (media types and names in order), or, without a body, the
    /// request alone; on each listener that serves it.
    func drive(_ operation: OpenAPIExampleDocument.Operation) async throws {
        let scheme = operation.node["security"]?.array?.first?.object?.keys.first
        let token = scheme.flatMap { tokens[$0] }
        let content = document.resolved(operation.node["requestBody"] ?? .null)["content"]?.object ?? [:]
        for url in listeners(of: operation).map({ $0 + path(operation.path) }) {
            guard !content.isEmpty else {
                try await expectSuccess(operation, url: url, token: token)
                continue
            }
            for (media, node) in content.sorted(by: { $0.key < $1.key }) {
                for (name, example) in (node["examples"]?.object ?? [:]).sorted(by: { $0.key < $1.key }) {
                    try await send(example["value"] ?? .null, named: name, as: media, to: url, of: operation, token: token)
                }
            }
        }
    }

    private func send(
        _ value: JSONTree, named name: String, as media: String, to url: String, of operation: OpenAPIExampleDocument.Operation,
        token: String?
    ) async throws {
        let label = "\(operation.id) \(media) example \(name)"
        let documented = try #require(documentedAnswer(operation, name), "\(label) is named after no response example")
        let body: String
        switch (media, value) {
        case ("application/x-ndjson", .string(let lines)):
            body = try lines.split(separator: "\n").map { line in
                String(decoding: try freshening.fresh(JSONTree.parse(Data(line.utf8))).data, as: UTF8.self) + "\n"
            }.joined()
        case (_, .string(let text)):
            body = text
        default:
            body = String(decoding: try freshening.fresh(value).data, as: UTF8.self)
        }
        var request = HTTPClientRequestBuilder(method: operation.method, url: url, body: body, token: token, contentType: media)
        if isEventRoute(operation) { request.idempotencyKey = UUID().uuidString.lowercased() }
        let reply = try await http.send(request)
        let text = String(decoding: reply.body, as: UTF8.self)
        #expect(reply.status == documented.status, "\(label): \(reply.status) \(text)")
        #expect(reply.contentType?.hasPrefix(documented.media) == true, "\(label): \(reply.contentType ?? "no Content-Type")")
        let answer = try? JSONTree.parse(reply.body)
        if let members = documented.value.object {
            let answered = Set(answer?.object?.keys.map { $0 } ?? [])
            #expect(answered == Set(members.keys), "\(label): \(text)")
        }
        record(answer, of: operation, documented: documented.value)
    }

    /// An operation without a body: its one success, with the members of one of its examples.
    private func expectSuccess(_ operation: OpenAPIExampleDocument.Operation, url: String, token: String?) async throws {
        let reply = try await http.send(operation.method, url, token: token)
        let text = String(decoding: reply.body, as: UTF8.self)
        let success = (operation.node["responses"]?.object ?? [:]).filter { $0.key.hasPrefix("2") }
        let (status, response) = try #require(success.first, "\(operation.id) documents a success")
        #expect(success.count == 1 && reply.status == Int(status), "\(operation.method) \(url): \(reply.status) \(text)")
        guard let content = document.resolved(response)["content"]?.object?.first else { return }
        let (media, node) = (content.key, content.value)
        #expect(reply.contentType?.hasPrefix(media) == true, "\(operation.id): \(reply.contentType ?? "no Content-Type")")
        guard media == "application/json" else { return }
        let answer = try? JSONTree.parse(reply.body)
        let documented = (node["examples"]?.object ?? [:]).values.compactMap { $0["value"]?.object.map { Set($0.keys) } }
        #expect(documented.contains(Set(answer?.object?.keys.map { $0 } ?? [])), "\(operation.id): \(text) vs \(documented)")
        record(answer, of: operation, documented: nil)
    }

    /// The response example named `name`: its status, media type and value.
    func documentedAnswer(_ operation: OpenAPIExampleDocument.Operation, _ name: String) -> (
        status: Int, media: String, value: JSONTree
    )? {
        var found: [(status: Int, media: String, value: JSONTree)] = []
        for (status, response) in operation.node["responses"]?.object ?? [:] {
            for (media, node) in document.resolved(response)["content"]?.object ?? [:] {
                if let code = Int(status), let value = node["examples"]?[name]?["value"] { found.append((code, media, value)) }
            }
        }
        // A shared response, listed under several statuses: its example's `status` says which.
        if found.count > 1 { found = found.filter { $0.value["status"]?.integer == $0.status } }
        return found.count == 1 ? found[0] : nil
    }

    /// What later operations need of an answer.
    private func record(_ answer: JSONTree?, of operation: OpenAPIExampleDocument.Operation, documented: JSONTree?) {
        guard let answer else { return }
        answers[operation.id] = answer
        if isEventRoute(operation) {
            events += ([answer] + (answer["results"]?.array ?? [])).compactMap { $0["event-identifier"]?.string }
        }
        if let tag = documented?["conversion-tag"]?.string, let issued = answer["conversion-tag"]?.string {
            freshening.replacements[tag] = issued
        }
        if let key = answer["app-key"]?.string {
            tokens["appKey"] = key
            handedOut["key"] = answer["key-identifier"]?.string
        }
        if let credential = answer["credential"]?.string {
            tokens["networkCredential"] = credential
            handedOut["credential"] = answer["credential-identifier"]?.string
        }
        if let deadLetter = answer["dead-letters"]?.array?.first?["id"]?.string { handedOut["dead-letter"] = deadLetter }
    }

    /// The event routes: those that read an `Idempotency-Key`.
    private func isEventRoute(_ operation: OpenAPIExampleDocument.Operation) -> Bool {
        (operation.node["parameters"]?.array ?? []).contains { $0["name"]?.string == "Idempotency-Key" }
    }

    /// The listeners its path item's `servers` name; ingest's public one when it names none.
    private func listeners(of operation: OpenAPIExampleDocument.Operation) -> [String] {
        let servers = (operation.item["servers"]?.array ?? []).compactMap { $0["description"]?.string }
        guard !servers.isEmpty else { return [services.ingestURL] }
        return servers.compactMap {
            $0.hasPrefix("the admin service")
                ? services.adminURL : $0.hasPrefix("ingest's operations listener") ? services.operationsURL : nil
        }
    }

    /// `template` with its parameters: the examples' ids, and what the services handed out.
    private func path(_ template: String) -> String {
        typealias Tests = PipelineSuites.OpenAPIExampleTests
        let values = [
            "id": template.contains("/dead-letters/") ? handedOut["dead-letter"] ?? "" : Tests.network,
            "item": String(template.contains("/publisher-apps/") ? Tests.publisher : Tests.advertised),
            "key": handedOut["key"] ?? "", "credential": handedOut["credential"] ?? "", "version": "1", "device": Tests.device,
        ]
        return values.reduce(template) { $0.replacingOccurrences(of: "{\($1.key)}", with: $1.value) }
    }
}
