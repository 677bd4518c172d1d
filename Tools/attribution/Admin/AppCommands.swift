import ArgumentParser

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

struct PublisherAppGet: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "get", abstract: "Show a publisher app's registration.")
    @OptionGroup var admin: AdminOptions
    @Argument(help: "The publisher app's item identifier.") var item: Int

    func run() async throws { try await AdminClient(options: admin).send(.GET, "/v1/admin/publisher-apps/\(item)") }
}

struct PublisherAppDelete: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete a publisher app's registration.")
    @OptionGroup var admin: AdminOptions
    @Argument(help: "The publisher app's item identifier.") var item: Int

    func run() async throws { try await AdminClient(options: admin).send(.DELETE, "/v1/admin/publisher-apps/\(item)") }
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

struct AdvertisedAppGet: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get", abstract: "Show an advertised app's configuration (as a put body).")
    @OptionGroup var admin: AdminOptions
    @Argument(help: "The advertised app's item identifier.") var item: Int

    func run() async throws { try await AdminClient(options: admin).send(.GET, "/v1/admin/advertised-apps/\(item)") }
}

struct AdvertisedAppDelete: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete an advertised app: its configuration, app keys and schemas.")
    @OptionGroup var admin: AdminOptions
    @Argument(help: "The advertised app's item identifier.") var item: Int

    func run() async throws { try await AdminClient(options: admin).send(.DELETE, "/v1/admin/advertised-apps/\(item)") }
}

struct AdvertisedAppRejections: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rejections", abstract: "Its last refused conversions, updates and activity reports.")
    @OptionGroup var admin: AdminOptions
    @Argument(help: "The advertised app's item identifier.") var item: Int

    func run() async throws {
        try await AdminClient(options: admin).send(.GET, "/v1/admin/advertised-apps/\(item)/rejections")
    }
}

/// `advertised-app keys issue|list|revoke`: the app keys its backend sends events with.
struct AppKeys: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys", abstract: "Issue, list and revoke the app's keys.",
        subcommands: [Issue.self, List.self, Revoke.self])

    struct Issue: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Issue an app key (shown once).")
        @OptionGroup var admin: AdminOptions
        @Argument(help: "The advertised app's item identifier.") var item: Int

        func run() async throws { try await AdminClient(options: admin).send(.POST, "/v1/admin/advertised-apps/\(item)/keys") }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List its live keys' identifiers.")
        @OptionGroup var admin: AdminOptions
        @Argument(help: "The advertised app's item identifier.") var item: Int

        func run() async throws { try await AdminClient(options: admin).send(.GET, "/v1/admin/advertised-apps/\(item)/keys") }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke one app key.")
        @OptionGroup var admin: AdminOptions
        @Argument(help: "The advertised app's item identifier.") var item: Int
        @Argument(help: "The key's identifier (from list).") var key: String

        func run() async throws {
            try await AdminClient(options: admin).send(.DELETE, "/v1/admin/advertised-apps/\(item)/keys/\(key.pathSegment)")
        }
    }
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
