/// The tally as an aligned text table: names left-aligned, counts right-aligned.
enum SummaryTable {
    static let header = ["ad network", "win w0", "win w1", "win w2", "non-win w0", "non-win w1", "non-win w2", "total"]

    static func render(_ tally: PostbackTally) -> String {
        var rows = [header]
        for row in tally.adNetworks { rows.append(cells(row.adNetworkIdentifier, row.counts)) }
        rows.append(cells("total", tally.totals))
        let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        let lines = rows.map { row in
            row.indices.map { column in
                let padding = String(repeating: " ", count: widths[column] - row[column].count)
                return column == 0 ? row[column] + padding : padding + row[column]
            }.joined(separator: "  ")
        }
        // A rule above the totals, as long as the widest line.
        let rule = String(repeating: "-", count: lines.map(\.count).max() ?? 0)
        return (lines.dropLast() + [rule, lines.last ?? ""]).joined(separator: "\n")
    }

    private static func cells(_ name: String, _ counts: PostbackTally.Counts) -> [String] {
        [name] + (counts.winning + counts.nonWinning + [counts.total]).map(String.init)
    }
}
