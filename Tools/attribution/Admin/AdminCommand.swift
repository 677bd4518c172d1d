import ArgumentParser

/// `attribution admin …`: the admin API from the command line, one subcommand per route
/// (docs/reference/http-api.md). Every answer is printed as JSON; a refusal exits 1 with the problem's
/// status, reason and detail on standard error.
struct AdminCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "admin",
        abstract: "The admin API: ad networks, apps, app keys, schemas, dead letters, device erasure.",
        discussion: """
            The token comes from --admin-token-file, else the file $ADMIN_TOKEN_FILE names, else \
            $ADMIN_TOKEN (never a flag: command lines are visible to every user of the machine). \
            Every subcommand takes the options after its own name. Under compose: docker compose run --rm \
            operator attribution admin dead-letters list --admin-url http://admin:8081
            """,
        subcommands: [
            AdNetworkCommand.self, PublisherAppCommand.self, AdvertisedAppCommand.self, DeadLettersCommand.self,
            EraseDeviceCommand.self,
        ]
    )
}

/// `attribution admin ad-network …`
struct AdNetworkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ad-network",
        abstract: "Register, show and delete ad networks; their credentials, refusals and test postbacks.",
        subcommands: [
            AdNetworkPut.self, RequestCommand<AdNetworkRequests.Get>.self,
            RequestCommand<AdNetworkRequests.Delete>.self, RequestCommand<AdNetworkRequests.Rejections>.self,
            AdNetworkCredentials.self, AdNetworkTestPostbacks.self,
        ])
}

/// `attribution admin publisher-app …`
struct PublisherAppCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publisher-app",
        abstract: "Register, show and delete publisher apps (the ad networks each lists).",
        subcommands: [
            PublisherAppPut.self, RequestCommand<AppRequests.PublisherGet>.self,
            RequestCommand<AppRequests.PublisherDelete>.self,
        ])
}

/// `attribution admin advertised-app …`
struct AdvertisedAppCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "advertised-app",
        abstract: "Register, show and delete advertised apps; their app keys, refusals and value schemas.",
        subcommands: [
            AdvertisedAppPut.self, RequestCommand<AppRequests.Get>.self, RequestCommand<AppRequests.Delete>.self,
            RequestCommand<AppRequests.Rejections>.self, AppKeys.self, ValueSchema.self,
        ])
}
