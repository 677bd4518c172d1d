import ArgumentParser
import NIOHTTP1

/// An admin request without a body about one registered thing (an ad network, an app):
/// the subcommand's name and help, and the route, `{id}` standing for the command's argument and
/// `{second}` for a second one (a credential's or a key's identifier).
protocol AdminRequest {
    static var name: String { get }
    static var abstract: String { get }
    static var method: HTTPMethod { get }
    static var path: String { get }
}

extension AdminRequest {
    static var method: HTTPMethod { .GET }

    /// What the argument names, read from the route: its help and its name in the usage line.
    static var subject: ArgumentHelp {
        path.hasPrefix("/v1/admin/ad-networks/")
            ? ArgumentHelp("The ad network's identifier.", valueName: "ad-network")
            : ArgumentHelp("The app's item identifier.", valueName: "item")
    }

    /// What a second argument names: a credential's or an app key's identifier.
    static var secondSubject: ArgumentHelp {
        path.contains("/credentials/")
            ? ArgumentHelp("The credential's identifier (from list).", valueName: "credential-id")
            : ArgumentHelp("The key's identifier (from list).", valueName: "key-id")
    }

    static func path(_ id: String, _ second: String? = nil) -> String {
        path.replacingOccurrences(of: "{id}", with: id.pathSegment)
            .replacingOccurrences(of: "{second}", with: (second ?? "").pathSegment)
    }
}

/// The subcommand sending `Request` about the thing its argument names.
struct RequestCommand<Request: AdminRequest>: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(commandName: Request.name, abstract: Request.abstract)
    }

    @OptionGroup var admin: AdminOptions
    @Argument(help: Request.subject) var id: String

    func run() async throws { try await AdminClient(options: admin).send(Request.method, Request.path(id)) }
}

/// The subcommand sending `Request` about one of a thing's credentials or keys (both identifiers given).
struct SecondRequestCommand<Request: AdminRequest>: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(commandName: Request.name, abstract: Request.abstract)
    }

    @OptionGroup var admin: AdminOptions
    @Argument(help: Request.subject) var id: String
    @Argument(help: Request.secondSubject) var second: String

    func run() async throws { try await AdminClient(options: admin).send(Request.method, Request.path(id, second)) }
}
