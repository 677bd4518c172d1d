import RedisStreams
import Synchronization

/// Copies messages to `output`, except that `poison` always fails and other messages fail their first `flakyTimes` tries.
final class FailingStage: StreamStage {
    let output: String
    let flakyTimes: Int
    let attempts = Mutex<[String: Int]>([:])

    init(output: String, flakyTimes: Int = 0) {
        self.output = output
        self.flakyTimes = flakyTimes
    }

    func reads(for batch: [StreamEntry]) -> StageReads { StageReads() }

    func decide(_ batch: [StreamEntry], state: [RedisReply]) async -> [StageOutcome] {
        batch.map { entry in
            let message = String(decoding: entry.message, as: UTF8.self)
            let attempt = self.attempts.withLock { attempts in
                attempts[message, default: 0] += 1
                return attempts[message]!
            }
            if message == "poison" { return .failed("poison message") }
            if attempt <= self.flakyTimes { return .failed("flaky failure \(attempt)") }
            return .write([StreamCommands.add(self.output, message: entry.message)])
        }
    }

    func attemptCount(_ message: String) -> Int {
        self.attempts.withLock { $0[message] ?? 0 }
    }
}
