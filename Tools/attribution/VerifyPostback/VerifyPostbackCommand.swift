import ArgumentParser
import AttributionCrypto
import Foundation
import Logging
import ToolSupport

/// `attribution verify-postback`: what a postback receiver checks, for one body, from a file or stdin.
struct VerifyPostbackCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify-postback",
        abstract: "Verify an AdAttributionKit or SKAdNetwork postback body and print its verified fields as JSON.",
        discussion: """
            A body with jws-string is an AdAttributionKit postback: its JWS (ES256) must verify with \
            --public-key (whatever kid it names) or with the key of --jwks-url that its kid names. A body \
            with attribution-signature is a SKAdNetwork postback (versions 1.0–4.0): its signature over the \
            version's signed fields must verify with --public-key or one of the keys of --jwks-url (P-192 for 1.0 and 2.0, P-256 from 2.1; \
            `--public-key apple` uses Apple's published keys, for AdAttributionKit the three by kid: \
            apple-cas-identifier/0, apple-development-identifier/0 and /1). On success the fields are printed as one JSON \
            object with "kind" (and "kid" for AdAttributionKit) and the exit status is 0; the value fields \
            (conversion-value, coarse-conversion-value, country-code, ad-interaction-type) are never signed. \
            Otherwise {"error": "<reason code>", "detail": "..."} goes to stderr, as its only line, and the \
            exit status is 1. A usage error (no key option, or both) exits 64 with the usage.
            """
    )

    @Option(help: "File holding the postback body (JSON). Default: standard input.")
    var file: String?

    @Option(
        help: """
            The verifying public key: base64 DER SubjectPublicKeyInfo (as Apple publishes it), PEM (give it as \
            --public-key=<PEM>: it starts with dashes), a JWK (AdAttributionKit), @<path> to read one of those \
            from a file, or `apple` for Apple's published AdAttributionKit and SKAdNetwork keys.
            """)
    var publicKey: String?

    @Option(
        name: .customLong("jwks-url"), help: "A key set to pick the AdAttributionKit key from by kid (instead of --public-key).")
    var jwksURL: String?

    /// Postbacks are small; anything this large is not one.
    static let maximumBodySize = 1 << 20

    func validate() throws {
        switch (publicKey, jwksURL) {
        case (nil, nil): throw ValidationError("give --public-key <key> or --jwks-url <url>")
        case (.some, .some): throw ValidationError("--public-key and --jwks-url are exclusive")
        case (nil, .some(let url)): try HTTPURLValidation.check(url, flag: "--jwks-url")
        case (.some, nil): break
        }
    }

    func run() async throws {
        let verified: VerifiedPostbackBody
        do throws(VerifyPostbackFailure) {
            let body = try readBody()
            let key = try await verificationKey(for: body)
            do {
                verified = try PostbackBodyVerifier.verify(body: body, key: key)
            } catch {
                throw VerifyPostbackFailure(error)
            }
        } catch {
            // One line, the JSON alone: a script reads stderr whole.
            printError(error.json)
            throw ExitCode(1)
        }
        print(try VerifiedPostbackFields.json(verified))
    }

    private func readBody() throws(VerifyPostbackFailure) -> Data {
        let body: Data?
        if let file {
            body = FileManager.default.contents(atPath: file)
        } else {
            body = try? FileHandle.standardInput.readToEnd() ?? Data()
        }
        guard let body else {
            throw VerifyPostbackFailure(code: "unreadable-input", detail: "cannot read \(file ?? "standard input")")
        }
        guard body.count <= Self.maximumBodySize else {
            throw VerifyPostbackFailure(code: "invalid-components", detail: "body is larger than \(Self.maximumBodySize) bytes")
        }
        return body
    }

    private func verificationKey(for body: Data) async throws(VerifyPostbackFailure) -> PostbackVerificationKey {
        if let publicKey {
            return try PostbackKeyArgument.parse(publicKey)
        }
        guard let jwksURL else { throw VerifyPostbackFailure(code: "invalid-key", detail: "no key given") }
        do {
            guard try PostbackBodyVerifier.kind(of: body) == .adAttributionKit else {
                // A SKAdNetwork body names no kid: each key of the set is tried.
                return .keySet(try await Self.fetchKeySet(jwksURL, containing: nil))
            }
            let keyID = try PostbackVerifier.keyID(inBody: body)
            return .keySet(try await Self.fetchKeySet(jwksURL, containing: keyID))
        } catch let error as JWSError {
            throw VerifyPostbackFailure(error)
        } catch {
            throw VerifyPostbackFailure(code: "key-unavailable", detail: "\(error)")
        }
    }

    /// The key set at `url`; nil `keyID` (a SKAdNetwork body) takes it as fetched.
    private static func fetchKeySet(_ url: String, containing keyID: String?) async throws -> JWKSet {
        // Logs would go to stdout by default; stdout carries only the verified fields.
        let logger = Logger(label: "attribution") { _ in SwiftLogNoOpLogHandler() }
        let cache = try KeySetCache(url: url, client: ToolHTTPClient(), logger: logger)
        return if let keyID { try await cache.keySet(containing: keyID) } else { try await cache.refresh() }
    }
}
