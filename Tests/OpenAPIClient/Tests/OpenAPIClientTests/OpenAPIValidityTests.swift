import Foundation
import OpenAPIKit
import Testing

/// The OpenAPI document as OpenAPIKit reads it: a client generator or a validator sees what these see.
@Suite("The OpenAPI document, by OpenAPIKit")
struct OpenAPIValidityTests {
    static func document() throws -> OpenAPI.Document {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("openapi.json")
        return try JSONDecoder().decode(OpenAPI.Document.self, from: try Data(contentsOf: file))
    }

    /// OpenAPI 3.1, decoded without a warning, and valid by OpenAPIKit's validator: its default rules
    /// (unique operation ids, references that resolve, a response for every operation, …) and the
    /// stricter ones a generated client relies on.
    @Test func itIsValidOpenAPI31() throws {
        let document = try Self.document()
        #expect(document.openAPIVersion == .v3_1_0)
        #expect(document.warnings.isEmpty, "decoding warnings: \(document.warnings)")
        let validator = Validator()
            .validating(.operationsContainResponses)
            .validating(.pathParametersAreDefined)
            .validating(.serverVariablesAreDefined)
        try document.validate(using: validator)
    }
}
