import ArgumentParser

/// `dead-letters list|replay`: postbacks that exhausted their retries or may not be sent.
struct DeadLettersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dead-letters", abstract: "List dead-lettered postbacks, or replay one or all.",
        subcommands: [List.self, Replay.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List them, newest first.")
        @OptionGroup var admin: AdminOptions

        func run() async throws { try await AdminClient(options: admin).send(.GET, "/v1/admin/dead-letters") }
    }

    struct Replay: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Replay one dead letter, or every one (oldest first) with --all.")
        @OptionGroup var admin: AdminOptions
        @Argument(help: "The dead letter's id (from list).") var id: String?
        @Flag(help: "Replay every dead letter.") var all = false

        func validate() throws {
            guard (id == nil) == all else { throw ValidationError("give a dead letter's id, or --all") }
        }

        func run() async throws {
            let path = id.map { "/v1/admin/dead-letters/\($0.pathSegment)/replay" } ?? "/v1/admin/dead-letters/replay"
            try await AdminClient(options: admin).send(.POST, path)
        }
    }
}

struct EraseDeviceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "erase-device", abstract: "Erase everything the pipeline holds about one device.")
    @OptionGroup var admin: AdminOptions
    @Argument(help: "The device identifier.") var device: String

    func run() async throws {
        // The body form: a device identifier in a path would land in access logs along the way.
        try await AdminClient(options: admin).send(
            .POST, "/v1/admin/device-erasures", try .json(["device-identifier": device]))
    }
}
