/// The Public Suffix List (publicsuffix.org): the suffixes under which anyone can register a name
/// (`com`, `co.uk`, `github.io`), so a host's registrable domain is its public suffix plus one label
/// (`x.github.io` stays `x.github.io`; `shop.example.co.uk` is `example.co.uk`). Read from the list's
/// own text format (https://github.com/publicsuffix/list/wiki/Format): one rule per line, `//`
/// comments, `*.` wildcards and `!` exceptions; both the ICANN and the private sections count, as in
/// browsers. The services load Debian's copy (`PUBLIC_SUFFIX_LIST`, the `publicsuffix` package).
public struct PublicSuffixList: Sendable, Hashable {
    /// Rules as written, lowercased: `co.uk`; `*.ck` kept as its parent `ck`; `!www.ck` as `www.ck`.
    var rules: Set<String> = []
    var wildcards: Set<String> = []
    var exceptions: Set<String> = []

    /// An empty list: only the implicit rule `*` applies (every top-level label is a public suffix).
    public init() {}

    /// Parses the list's text. Rules are the first whitespace-separated word of a line; Unicode rules
    /// stay as written, so they match only the same Unicode labels (hosts here are ASCII; an `xn--`
    /// host falls back to the implicit rule `*`).
    public init(text: String) {
        for line in text.split(whereSeparator: \.isNewline) {
            guard let word = line.split(whereSeparator: \.isWhitespace).first, !word.hasPrefix("//") else { continue }
            let rule = word.lowercased()
            if rule.hasPrefix("!") {
                exceptions.insert(String(rule.dropFirst()))
            } else if rule.hasPrefix("*.") {
                wildcards.insert(String(rule.dropFirst(2)))
            } else {
                rules.insert(rule)
            }
        }
    }

    /// How many rules the list holds (a sanity check when loading a file).
    public var count: Int { rules.count + wildcards.count + exceptions.count }

    /// How many trailing labels of `labels` form its public suffix (the prevailing rule: an exception,
    /// else the longest matching rule, else `*`).
    func suffixLength(_ labels: [Substring]) -> Int {
        for start in labels.indices {
            if exceptions.contains(labels[start...].joined(separator: ".")) { return labels.count - start - 1 }
        }
        for start in labels.indices {
            let name = labels[start...].joined(separator: ".")
            let parent = labels[(start + 1)...].joined(separator: ".")
            if rules.contains(name) || (start + 1 < labels.count && wildcards.contains(parent)) {
                return labels.count - start
            }
        }
        return 1
    }

    /// The registrable domain of a DNS name (lowercased, no trailing dot): its public suffix plus one
    /// label. Nil when the name is itself a public suffix, or has an empty label.
    public func registrableDomain(of host: String) -> String? {
        let name = host.hasSuffix(".") ? host.dropLast() : Substring(host)
        let labels = name.lowercased().split(separator: ".", omittingEmptySubsequences: false)
        guard !labels.isEmpty, labels.allSatisfy({ !$0.isEmpty }) else { return nil }
        let suffix = suffixLength(labels)
        guard labels.count > suffix else { return nil }
        return labels.suffix(suffix + 1).joined(separator: ".")
    }
}
