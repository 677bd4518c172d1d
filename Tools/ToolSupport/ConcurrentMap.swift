/// Runs `body` over `items` with at most `limit` running at once, results in input order. The first
/// error cancels the rest and is rethrown: one failure stops the whole run.
public func concurrentMap<Item: Sendable, Result: Sendable>(
    _ items: [Item], limit: Int, _ body: @escaping @Sendable (Item) async throws -> Result
) async throws -> [Result] {
    try await withThrowingTaskGroup(of: (Int, Result).self) { group in
        var results = [Result?](repeating: nil, count: items.count)
        var next = 0
        func collect(_ finished: (Int, Result)) { results[finished.0] = finished.1 }
        while next < items.count {
            if next >= limit, let finished = try await group.next() { collect(finished) }
            let index = next
            let item = items[index]
            group.addTask { (index, try await body(item)) }
            next += 1
        }
        while let finished = try await group.next() { collect(finished) }
        return results.compactMap { $0 }
    }
}
