import AttributionModel
import Foundation

/// Loads `PUBLIC_SUFFIX_LIST` once at start: a missing or unreadable file, or one too short to be the
/// list, is one configuration line and exit 2 rather than copies quietly sent to the wrong domain.
public enum PublicSuffixListFile {
    public static let debianPath = "/usr/share/publicsuffix/public_suffix_list.dat"
    /// The real list holds about 10 000 rules; a file with far fewer is something else.
    static let minimumRules = 1_000

    public static func load(_ environment: ServiceEnvironment) throws(ConfigurationError) -> PublicSuffixList {
        let path = try environment.value(.publicSuffixList)
        let key = ConfigurationKey.Typed<String>.publicSuffixList.name
        guard let data = try? Data(contentsOf: URL(fileURLWithPath: path)) else {
            throw ConfigurationError(
                key: key,
                problem:
                    "cannot read \(path) (install Debian's publicsuffix package, or download https://publicsuffix.org/list/public_suffix_list.dat and set \(key) to it)"
            )
        }
        let list = PublicSuffixList(text: String(decoding: data, as: UTF8.self))
        guard list.count >= minimumRules else {
            throw ConfigurationError(
                key: key, problem: "\(path) holds \(list.count) rules, not the Public Suffix List (about 10 000)")
        }
        return list
    }
}
