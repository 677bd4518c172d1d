import ArgumentParser
import NIOHTTP1

struct PublisherAppPut: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "put", abstract: "Register a publisher app with the ad networks it lists.")
    @OptionGroup var admin: AdminOptions
    @Argument(help: "The publisher app's item identifier.") var item: Int
    @Option(name: .customLong("ad-network"), help: "An ad network it lists (repeat for each).") var adNetworks: [String]

    func validate() throws {
        guard !adNetworks.isEmpty else { throw ValidationError("give at least one --ad-network") }
    }

    func run() async throws {
        try await AdminClient(options: admin).send(
            .PUT, "/v1/admin/publisher-apps/\(item)", try .json(["AdNetworkIdentifiers": adNetworks]))
    }
}

struct AdvertisedAppPut: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "put",
        abstract: "Register an advertised app, or replace its configuration: a JSON file or the app's Info.plist.")
    @OptionGroup var admin: AdminOptions
    @Argument(help: "The advertised app's item identifier.") var item: Int
    @Option(help: "The configuration: JSON, or the app's Info.plist (XML); -: standard input.") var file: String

    func run() async throws {
        try await AdminClient(options: admin).send(.PUT, "/v1/admin/advertised-apps/\(item)", try .file(file))
    }
}

/// The app routes without a body.
enum AppRequests {
    enum PublisherGet: AdminRequest {
        static let name = "get", abstract = "Show a publisher app's registration.", path = "/v1/admin/publisher-apps/{id}"
    }
    enum PublisherDelete: AdminRequest {
        static let name = "delete", abstract = "Delete a publisher app's registration."
        static let path = "/v1/admin/publisher-apps/{id}", method = HTTPMethod.DELETE
    }
    enum Get: AdminRequest {
        static let name = "get", abstract = "Show an advertised app's configuration (as a put body)."
        static let path = "/v1/admin/advertised-apps/{id}"
    }
    enum Delete: AdminRequest {
        static let name = "delete", abstract = "Delete an advertised app: its configuration, app keys and schemas."
        static let path = "/v1/admin/advertised-apps/{id}", method = HTTPMethod.DELETE
    }
    enum Rejections: AdminRequest {
        static let name = "rejections", abstract = "Its last refused conversions, updates and activity reports."
        static let path = "/v1/admin/advertised-apps/{id}/rejections"
    }
    enum IssueKey: AdminRequest {
        static let name = "issue", abstract = "Issue an app key (shown once)."
        static let path = "/v1/admin/advertised-apps/{id}/keys", method = HTTPMethod.POST
    }
    enum ListKeys: AdminRequest {
        static let name = "list", abstract = "List its live keys' identifiers.", path = "/v1/admin/advertised-apps/{id}/keys"
    }
    enum RevokeKey: AdminRequest {
        static let name = "revoke", abstract = "Revoke one app key."
        static let path = "/v1/admin/advertised-apps/{id}/keys/{second}", method = HTTPMethod.DELETE
    }
}

/// `advertised-app keys issue|list|revoke`: the app keys its backend sends events with.
struct AppKeys: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys", abstract: "Issue, list and revoke the app's keys.",
        subcommands: [
            RequestCommand<AppRequests.IssueKey>.self, RequestCommand<AppRequests.ListKeys>.self,
            SecondRequestCommand<AppRequests.RevokeKey>.self,
        ])
}

/// `advertised-app schema put|get`: its conversion-value schema, versioned.
struct ValueSchema: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema", abstract: "Put a new conversion-value schema version, or show one.",
        subcommands: [Put.self, Get.self])

    struct Put: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Store a new schema version from a JSON file.")
        @OptionGroup var admin: AdminOptions
        @Argument(help: "The advertised app's item identifier.") var item: Int
        @Option(help: "The schema, a JSON file (-: standard input).") var file: String

        func run() async throws {
            try await AdminClient(options: admin).send(
                .PUT, "/v1/admin/advertised-apps/\(item)/conversion-value-schema", try .file(file))
        }
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show the current schema, or one version.")
        @OptionGroup var admin: AdminOptions
        @Argument(help: "The advertised app's item identifier.") var item: Int
        @Option(help: "A version (default: the current one).") var version: Int?

        func run() async throws {
            let path = "/v1/admin/advertised-apps/\(item)/conversion-value-schema" + (version.map { "/\($0)" } ?? "")
            try await AdminClient(options: admin).send(.GET, path)
        }
    }
}
