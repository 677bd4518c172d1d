import ArgumentParser
import Foundation
import NIOHTTP1

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
        String(decoding: try AdminClient.read(path), as: UTF8.self)
    }
}

/// The ad network routes without a body.
enum AdNetworkRequests {
    enum Get: AdminRequest {
        static let name = "get", abstract = "Show an ad network's registration.", path = "/v1/admin/ad-networks/{id}"
    }
    enum Delete: AdminRequest {
        static let name = "delete", abstract = "Delete an ad network's registration, credentials and refusal lists."
        static let path = "/v1/admin/ad-networks/{id}", method = HTTPMethod.DELETE
    }
    enum Rejections: AdminRequest {
        static let name = "rejections", abstract = "Its last refused impressions, with their reasons."
        static let path = "/v1/admin/ad-networks/{id}/rejections"
    }
    enum Issue: AdminRequest {
        static let name = "issue", abstract = "Issue a credential (shown once)."
        static let path = "/v1/admin/ad-networks/{id}/credentials", method = HTTPMethod.POST
    }
    enum List: AdminRequest {
        static let name = "list", abstract = "List its live credentials' identifiers."
        static let path = "/v1/admin/ad-networks/{id}/credentials"
    }
    enum Revoke: AdminRequest {
        static let name = "revoke", abstract = "Revoke one credential."
        static let path = "/v1/admin/ad-networks/{id}/credentials/{second}", method = HTTPMethod.DELETE
    }
}

/// `ad-network credentials issue|list|revoke`: the credentials of the network's own routes.
struct AdNetworkCredentials: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "credentials", abstract: "Issue, list and revoke the credentials of the network's own routes.",
        subcommands: [
            RequestCommand<AdNetworkRequests.Issue>.self, RequestCommand<AdNetworkRequests.List>.self,
            SecondRequestCommand<AdNetworkRequests.Revoke>.self,
        ])
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
