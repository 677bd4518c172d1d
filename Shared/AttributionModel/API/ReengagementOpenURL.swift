import Foundation

/// The URL a re-engagement opens its app with. Apple's system appends `AdAttributionKitReengagementOpen`
/// to the re-engagement URL always, even when the caps mean that no conversion is created; the app
/// reads the parameter's value (the conversion tag) to send updates to that conversion alone. Ingest
/// builds the same URL for a re-engagement that names its `reengagement-url`, before attribution
/// decides, so the answer carries it whatever the decision.
public enum ReengagementOpenURL {
    /// The query parameter Apple appends.
    public static let parameter = "AdAttributionKitReengagementOpen"
    /// A URL longer than this is refused: the longest that browsers and link handlers agree to carry.
    public static let maxBytes = 2_048

    /// `url` checked: an absolute `https` URL with a host (a universal link, as re-engagement URLs are),
    /// in its percent-encoded form (printable ASCII, no spaces), at most `maxBytes` long.
    public static func validate(_ url: String) throws(RequestProblem) -> URLComponents {
        let rule =
            "reengagement-url is the absolute https URL (a universal link) the re-engagement opens, "
            + "percent-encoded, at most \(maxBytes) bytes"
        guard url.utf8.count <= maxBytes, url.utf8.allSatisfy(isURLByte) else {
            throw RequestProblem(.invalidReengagementURL, rule)
        }
        guard let components = URLComponents(string: url), components.scheme?.lowercased() == "https",
            let host = components.host, !host.isEmpty
        else { throw RequestProblem(.invalidReengagementURL, rule) }
        return components
    }

    /// `url` with `AdAttributionKitReengagementOpen=<tag>` as its last query item, replacing any the URL
    /// already had (a link reused from an earlier open); the other query items stay as they were
    /// written, their encoding untouched.
    public static func opening(_ url: URLComponents, tag: String) -> String {
        var url = url
        var items = (url.percentEncodedQueryItems ?? []).filter { $0.name != parameter }
        let value = tag.addingPercentEncoding(withAllowedCharacters: queryValueAllowed) ?? tag
        items.append(URLQueryItem(name: parameter, value: value))
        url.percentEncodedQueryItems = items
        return url.string ?? ""
    }

    /// Printable ASCII that may stand in a URL as written (RFC 3986 characters and `%`).
    private static func isURLByte(_ byte: UInt8) -> Bool {
        byte > 0x20 && byte < 0x7F && !"\"<>\\^`{|}".utf8.contains(byte)
    }

    private static let queryValueAllowed = CharacterSet.urlQueryAllowed.subtracting(CharacterSet(charactersIn: "&=+#"))
}
