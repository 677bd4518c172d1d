import AttributionModel
import Foundation

/// The examples' JSON, as the model's `JSONValue` (integers apart from other numbers), with what the
/// tests read of it.
typealias JSONTree = JSONValue

extension JSONValue {
    static func parse(_ data: Data) throws -> JSONTree { try JSONDecoder().decode(JSONTree.self, from: data) }

    var data: Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)) ?? Data()
    }

    subscript(_ member: String) -> JSONTree? { object?[member] }

    var object: [String: JSONTree]? { if case .object(let value) = self { value } else { nil } }
    var array: [JSONTree]? { if case .array(let value) = self { value } else { nil } }
    var string: String? { if case .string(let value) = self { value } else { nil } }
    var integer: Int? { if case .integer(let value) = self { Int(value) } else { nil } }
}

/// The OpenAPI document read as data: its operations, `$ref`s followed, and each media type's examples.
struct OpenAPIExampleDocument {
    let root: JSONTree

    struct Operation {
        let id: String
        let method: String
        let path: String
        /// The path item: its `servers` say which listener serves it.
        let item: JSONTree
        let node: JSONTree
    }

    /// One named example of a media type: where it is, its value and the schema it must fit.
    struct Example {
        let operation: String
        /// "request", or the response's status.
        let place: String
        let media: String
        let name: String
        let value: JSONTree
        let schema: JSONTree
    }

    static func read() throws -> OpenAPIExampleDocument {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return OpenAPIExampleDocument(
            root: try JSONTree.parse(Data(contentsOf: root.appendingPathComponent("Services/ingest/openapi.json"))))
    }

    var operations: [Operation] {
        (root["paths"]?.object ?? [:]).sorted { $0.key < $1.key }.flatMap { path, item in
            (item.object ?? [:]).sorted { $0.key < $1.key }.compactMap { method, node in
                node["operationId"]?.string.map {
                    Operation(id: $0, method: method.uppercased(), path: path, item: item, node: node)
                }
            }
        }
    }

    /// `node` itself, or what its `$ref` (`#/…` within this document) names.
    func resolved(_ node: JSONTree) -> JSONTree {
        guard let reference = node["$ref"]?.string, reference.hasPrefix("#/") else { return node }
        let target = reference.dropFirst(2).split(separator: "/").reduce(Optional(root)) { $0?[String($1)] }
        return target.map(resolved) ?? .null
    }

    typealias MediaType = (operation: String, place: String, media: String, node: JSONTree)

    /// Every media type of a request body or response, whether or not it has examples.
    func mediaTypes() -> [MediaType] {
        operations.flatMap { operation -> [MediaType] in
            let requests = (resolved(operation.node["requestBody"] ?? .null)["content"]?.object ?? [:]).map {
                (operation: operation.id, place: "request", media: $0.key, node: $0.value)
            }
            let responses = (operation.node["responses"]?.object ?? [:]).flatMap { response -> [MediaType] in
                (resolved(response.value)["content"]?.object ?? [:]).map {
                    (operation: operation.id, place: response.key, media: $0.key, node: $0.value)
                }
            }
            return requests + responses
        }
    }

    /// Every example, NDJSON ones line by line (each held to the JSON array's item schema).
    func examples() -> [Example] {
        mediaTypes().flatMap { operation, place, media, node in
            (node["examples"]?.object ?? [:]).flatMap { entry -> [Example] in
                let (name, value) = (entry.key, entry.value["value"] ?? .null)
                guard media == "application/x-ndjson", let text = value.string else {
                    return [
                        Example(
                            operation: operation, place: place, media: media, name: name, value: value,
                            schema: node["schema"] ?? .null)
                    ]
                }
                let items = self.operations.first { $0.id == operation }.flatMap {
                    resolved($0.node["requestBody"] ?? .null)["content"]?["application/json"]?["schema"]?["items"]
                }
                return text.split(separator: "\n").map { line in
                    Example(
                        operation: operation, place: place, media: media, name: name,
                        value: (try? JSONTree.parse(Data(line.utf8))) ?? .string(String(line)), schema: items ?? .null)
                }
            }
        }
    }

    /// Where `value` does not fit `schema`, structurally: types, `enum` and `const`, required members,
    /// members outside `properties` where `additionalProperties` is false, bounds, and `allOf`, `anyOf`,
    /// `oneOf` (exactly one) and `not`. Formats, patterns and lengths are not checked.
    func misfits(_ value: JSONTree, _ schema: JSONTree, at path: String = "$") -> [String] {
        let schema = resolved(schema)
        var found = (schema["allOf"]?.array ?? []).flatMap { misfits(value, $0, at: path) }
        if let any = schema["anyOf"]?.array, !any.contains(where: { misfits(value, $0, at: path).isEmpty }) {
            found.append("\(path) fits none of anyOf")
        }
        if let one = schema["oneOf"]?.array {
            let fitting = one.filter { misfits(value, $0, at: path).isEmpty }.count
            if fitting != 1 { found.append("\(path) fits \(fitting) of oneOf, not 1") }
        }
        if let not = schema["not"], misfits(value, not, at: path).isEmpty { found.append("\(path) fits its not") }
        if let type = schema["type"]?.string, !Self.hasType(value, type) {
            return found + ["\(path) is not of type \(type)"]
        }
        if let allowed = schema["enum"]?.array, !allowed.contains(value) { found.append("\(path) is not one of its enum") }
        if let constant = schema["const"], constant != value { found.append("\(path) is not its const") }
        if let number = Self.number(value) {
            if let minimum = schema["minimum"].flatMap(Self.number), number < minimum { found.append("\(path) < \(minimum)") }
            if let maximum = schema["maximum"].flatMap(Self.number), number > maximum { found.append("\(path) > \(maximum)") }
        }
        if case .object(let members) = value {
            let properties = schema["properties"]?.object ?? [:]
            for required in schema["required"]?.array?.compactMap(\.string) ?? [] where members[required] == nil {
                found.append("\(path) lacks \(required)")
            }
            for (name, member) in members.sorted(by: { $0.key < $1.key }) {
                if let property = properties[name] {
                    found += misfits(member, property, at: "\(path).\(name)")
                } else if schema["additionalProperties"] == .bool(false) {
                    found.append("\(path).\(name) is not a member of its schema")
                } else if let additional = schema["additionalProperties"], additional.object != nil {
                    found += misfits(member, additional, at: "\(path).\(name)")
                }
            }
        }
        if case .array(let items) = value, let itemSchema = schema["items"] {
            for (index, item) in items.enumerated() { found += misfits(item, itemSchema, at: "\(path)[\(index)]") }
        }
        return found
    }

    static func hasType(_ value: JSONTree, _ type: String) -> Bool {
        switch (type, value) {
        case ("object", .object), ("array", .array), ("string", .string), ("boolean", .bool), ("null", .null),
            ("integer", .integer), ("number", .integer), ("number", .number):
            true
        default: false
        }
    }

    static func number(_ value: JSONTree) -> Double? {
        switch value {
        case .integer(let value): Double(value)
        case .number(let value): value
        default: nil
        }
    }
}
