/// How long to wait before resending after `TRYAGAIN` or `CLUSTERDOWN`: 25 ms, doubling, until a
/// budget is spent. A failover takes about node-timeout plus an election (a second or two with the
/// usual settings), a migration step milliseconds; waiting longer than the budget only hides an outage.
struct ClusterBackoff {
    /// The total this call may wait, in milliseconds.
    let budgetMilliseconds: Int
    private var spentMilliseconds = 0
    private var nextMilliseconds = 25

    /// A backoff of at most `budgetMilliseconds` in total.
    init(budgetMilliseconds: Int) {
        self.budgetMilliseconds = max(0, budgetMilliseconds)
    }

    /// The next wait; nil once the budget is spent (then the error reply is returned as is).
    mutating func next() -> Int? {
        guard self.spentMilliseconds < self.budgetMilliseconds else { return nil }
        let wait = min(self.nextMilliseconds, self.budgetMilliseconds - self.spentMilliseconds)
        self.spentMilliseconds += wait
        self.nextMilliseconds *= 2
        return wait
    }
}
