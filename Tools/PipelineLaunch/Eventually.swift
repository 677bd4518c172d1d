/// Polls `condition` until it holds or `timeout` passes; returns whether it held. For waiting on other tasks.
public func eventually(
    timeout: Duration = .seconds(10),
    every interval: Duration = .milliseconds(20),
    _ condition: () async throws -> Bool
) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try await condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        try await Task.sleep(for: interval)
    }
}
