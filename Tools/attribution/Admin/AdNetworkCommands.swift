import ArgumentParser
import Foundation

/// `ad-network put ID --public-key FILE --postback-url URL`: registers the network or replaces its
/// registration (a new key keeps the old one valid for the grace it names).
struct AdNetworkPut: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "put", abstract: "Register an ad network, or replace its registration (key rotation).")

    @OptionGroup var admin: AdminOptions
    @Argument(help: "The ad network's identifier, e.g. example.adattributionkit.") var id: String
    @Option(help: "Its impression-signing public key: a PEM or JWK file.") var publicKey: String
    @Option(help: "Where its postbacks go (https, public).") var postbackURL: String
    @Option(help: "Its SKAdNetwork public key, a PEM file (for SKAdNetwork impressions).") var skanPublicKey: String?
    @Option(help: "How long the replaced key still verifies, in seconds.") var previousKeyGraceSeconds: Int?

    struct Registration: Encodable {
        var publicKey: String
        var postbackURL: String
        var skanPublicKey: String?
        var previousKeyGraceSeconds: Int?
        enum CodingKeys: String, CodingKey {
            case publicKey = "public-key"
            case postbackURL = "postback-url"
            case skanPublicKey = "skan-public-key"
            case previousKeyGraceSeconds = "previous-key-grace-seconds"
        }
    }

    func run() async throws {
        let registration = Registration(
            publicKey: try Self.text(publicKey), postbackURL: postbackURL, skanPublicKey: try skanPublicKey.map(Self.text),
            previousKeyGraceSeconds: previousKeyGraceSeconds)
        try await AdminClient(options: admin).send(.PUT, "/v1/admin/ad-networks/\(id.pathSegment)", try .json(registration))
    }

    static func text(_ path: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else { throw ValidationError("cannot read \(path)") }
        return String(decoding: data, as: UTF8.self)
    }
}

struct AdNetworkGet: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "get", abstract: "Show an ad network's registration.")
    @OptionGroup var admin: AdminOptions
    @Argument(help: "The ad network's identifier.") var id: String

    func run() async throws {
        try await AdminClient(options: admin).send(.GET, "/v1/admin/ad-networks/\(id.pathSegment)")
    }
}

struct AdNetworkDelete: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete an ad network's registration, credentials and refusal lists.")
    @OptionGroup var admin: AdminOptions
    @Argument(help: "The ad network's identifier.") var id: String

    func run() async throws {
        try await AdminClient(options: admin).send(.DELETE, "/v1/admin/ad-networks/\(id.pathSegment)")
    }
}

struct AdNetworkRejections: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rejections", abstract: "Its last refused impressions, with their reasons.")
    @OptionGroup var admin: AdminOptions
    @Argument(help: "The ad network's identifier.") var id: String

    func run() async throws {
        try await AdminClient(options: admin).send(.GET, "/v1/admin/ad-networks/\(id.pathSegment)/rejections")
    }
}

/// `ad-network credentials issue|list|revoke`: the credentials of the network's own routes.
struct AdNetworkCredentials: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "credentials", abstract: "Issue, list and revoke the credentials of the network's own routes.",
        subcommands: [Issue.self, List.self, Revoke.self])

    struct Issue: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Issue a credential (shown once).")
        @OptionGroup var admin: AdminOptions
        @Argument(help: "The ad network's identifier.") var id: String

        func run() async throws {
            try await AdminClient(options: admin).send(.POST, "/v1/admin/ad-networks/\(id.pathSegment)/credentials")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List its live credentials' identifiers.")
        @OptionGroup var admin: AdminOptions
        @Argument(help: "The ad network's identifier.") var id: String

        func run() async throws {
            try await AdminClient(options: admin).send(.GET, "/v1/admin/ad-networks/\(id.pathSegment)/credentials")
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke one credential.")
        @OptionGroup var admin: AdminOptions
        @Argument(help: "The ad network's identifier.") var id: String
        @Argument(help: "The credential's identifier (from list).") var credential: String

        func run() async throws {
            try await AdminClient(options: admin).send(
                .DELETE, "/v1/admin/ad-networks/\(id.pathSegment)/credentials/\(credential.pathSegment)")
        }
    }
}

struct AdNetworkTestPostbacks: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test-postbacks",
        abstract: "Send test postbacks of one tier to the network (signed with the development key).",
        discussion: "Members beyond --tier and --advertised-item-identifier: docs/integrating/ad-networks.md.")
    @OptionGroup var admin: AdminOptions
    @Argument(help: "The ad network's identifier.") var id: String
    @Option(help: "The crowd-anonymity tier, 0–3.") var tier: Int?
    @Option(help: "The advertised app's item identifier.") var advertisedItemIdentifier: Int?
    @Option(help: "The whole body instead, a JSON file (-: standard input).") var bodyFile: String?

    func validate() throws {
        guard (bodyFile == nil) != (tier == nil || advertisedItemIdentifier == nil) else {
            throw ValidationError("give --tier and --advertised-item-identifier, or --body-file")
        }
    }

    func run() async throws {
        let body: AdminClient.Body
        if let bodyFile {
            body = try .file(bodyFile)
        } else {
            body = try .json(["tier": tier ?? 0, "advertised-item-identifier": advertisedItemIdentifier ?? 0])
        }
        try await AdminClient(options: admin).send(.POST, "/v1/admin/ad-networks/\(id.pathSegment)/test-postbacks", body)
    }
}
