import ArgumentParser
import Foundation

/// Flag checks shared by the subcommands that talk HTTP.
enum HTTPURLValidation {
    /// An absolute http(s) URL with a host, or a ValidationError that names the flag.
    static func check(_ text: String, flag: String) throws {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            url.host != nil
        else { throw ValidationError("\(flag) must be an absolute http(s) URL, e.g. http://127.0.0.1:8080; not \(text)") }
    }
}
