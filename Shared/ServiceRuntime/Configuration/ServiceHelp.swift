import Foundation

/// What `<service> --help` prints: what the service does, its options, and every configuration key it
/// reads with its type, default and allowed values (from the same catalog the configuration reference's table comes from).
public struct ServiceHelp: Sendable {
    public let name: String
    public let summary: String
    /// Flags besides `--help`, with what each prints.
    public let options: [Option]

    public struct Option: Sendable {
        public let flag: String
        public let meaning: String

        public init(_ flag: String, _ meaning: String) {
            self.flag = flag
            self.meaning = meaning
        }
    }

    public init(name: String, summary: String, options: [Option] = []) {
        self.name = name
        self.summary = summary
        self.options = options
    }

    /// The first line of `--help`'s usage.
    public var usage: String { "Usage: \(name) [--help] [--version]" + options.map { " [\($0.flag)]" }.joined() }

    public var text: String {
        var lines = ["\(name): \(summary)", "", usage, ""]
        let flags =
            [Option("--help, -h", "print this help and exit"), Option("--version", "print the version and exit")] + options
        let width = flags.map(\.flag.count).max() ?? 0
        lines += flags.map { "  " + $0.flag.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.meaning }
        lines += ["", "Configuration, from the environment (docs/reference/configuration.md has the same table):"]
        for key in ConfigurationKey.all where key.services.contains(name) {
            let facts = [key.type, key.defaultValue.map { "default \($0)" } ?? "required", key.allowed.map { "allowed \($0)" }]
            lines.append("  \(key.name) (\(facts.compactMap { $0 }.joined(separator: "; ")))")
            lines.append("      \(key.summary)")
        }
        return lines.joined(separator: "\n")
    }

    /// What the arguments (without the program's name) ask for: the help, the version, an option's
    /// output, or the service; an argument the service does not know is refused, never ignored (a
    /// mistyped flag would otherwise start the service).
    public enum Request: Equatable, Sendable {
        case help, version, service
        case option(String)
        case refused(String)
    }

    public func request(_ arguments: [String]) -> Request {
        if arguments.contains(where: { $0 == "--help" || $0 == "-h" }) { return .help }
        if let unknown = arguments.first(where: { argument in !options.contains { $0.flag == argument } && argument != "--version"
        }) {
            return .refused(
                "\(name): unknown argument \(unknown)\n\(usage)\n(\(name) --help lists the options and the configuration)")
        }
        if arguments.contains("--version") { return .version }
        return arguments.first.map(Request.option) ?? .service
    }

    /// Answers `--help` and `--version` (exit 0) and refuses an unknown argument with the usage on
    /// standard error (exit 2). Returns the option asked for, if any, nil for the service itself.
    @discardableResult
    public func answer(_ arguments: [String] = CommandLine.arguments) -> String? {
        switch request(Array(arguments.dropFirst())) {
        case .help:
            print(text)
            exit(0)
        case .version:
            print("\(name) \(PipelineVersion.current)")
            exit(0)
        case .refused(let message):
            FileHandle.standardError.write(Data((message + "\n").utf8))
            exit(2)
        case .option(let flag): return flag
        case .service: return nil
        }
    }
}
