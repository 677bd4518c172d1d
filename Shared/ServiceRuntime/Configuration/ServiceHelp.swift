import Foundation

/// What `<service> --help` prints: what the service does, its options, and every configuration key it
/// reads with its type, default and allowed values (from the same catalog the README table comes from).
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

    public var text: String {
        var lines = ["\(name): \(summary)", "", "Usage: \(name) [--help]" + options.map { " [\($0.flag)]" }.joined(), ""]
        let flags = [Option("--help, -h", "print this help and exit")] + options
        let width = flags.map(\.flag.count).max() ?? 0
        lines += flags.map { "  " + $0.flag.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.meaning }
        lines += ["", "Configuration, from the environment (the README's Configuration section has the same table):"]
        for key in ConfigurationKey.all where key.services.contains(name) {
            let facts = [key.type, key.defaultValue.map { "default \($0)" } ?? "required", key.allowed.map { "allowed \($0)" }]
            lines.append("  \(key.name) (\(facts.compactMap { $0 }.joined(separator: "; ")))")
            lines.append("      \(key.summary)")
        }
        return lines.joined(separator: "\n")
    }

    /// Prints the help and exits 0 when the arguments ask for it.
    public func answer(_ arguments: [String] = CommandLine.arguments) {
        guard arguments.dropFirst().contains(where: { $0 == "--help" || $0 == "-h" }) else { return }
        print(text)
        exit(0)
    }
}
