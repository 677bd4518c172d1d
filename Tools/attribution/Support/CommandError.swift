/// A failure while a subcommand runs (as opposed to a bad flag): ArgumentParser prints the message
/// without the usage text, which would only distract from it.
struct CommandError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
