import AttributionModel
import Foundation
import Logging
import PipelineCatalog
import RedisStreams
import ServiceRuntime
import Synchronization

/// Attempts still under way when their batch is written. The batch does not wait for a slow
/// destination: it keeps an in-flight record of each such delivery in the retry queue (due when the
/// attempt must have ended, `DestinationLanes.lease`), acknowledges its input, and goes on.
/// Once the batch committed and the attempt ended, its outcome replaces the record in one script, only
/// if the record is still the one the batch wrote. If the dispatcher stops first, the record comes due
/// and counts as a failed attempt (`DispatcherStep.lostAttempt`): nothing is lost, and the postback is
/// sent again on the retry schedule.
struct LateOutcomes: Sendable {
    let connection: RedisConnection
    let logger: Logger
    /// The late attempts not finished yet, which a stopping dispatcher waits for.
    let pending = Countdown()

    /// The script's arguments for a dead letter.
    private static func dead(_ retry: DeliveryRetry, reason: String) -> [[UInt8]] {
        [Array("dead-lettered".utf8), Array("dead".utf8)]
            + DispatcherStage.deadLetterFields(retry, reason: reason).map { Array($0.utf8) }
    }

    /// Replaces the in-flight record `id` (scheduled at `leaseDue` in `partition`'s retry queue) by the
    /// attempt's verdict (`deferred`: the lane held it back, it was not attempted); a record released or
    /// replaced meanwhile is left alone. Retried while the lease lasts if Redis does not answer.
    func write(
        _ verdict: DispatcherStep.Verdict, deferred: Bool, id: String, leaseDue: Milliseconds, in partition: Partition
    ) async -> Bool {
        let queue = DelayedQueues.deliveryRetries(partition)
        var arguments: [[UInt8]] = [Array(id.utf8), Array(String(leaseDue).utf8)]
        switch verdict {
        case .delivered:
            arguments += [Array("delivered".utf8)]
        case .retry(let retry, let due):
            do {
                let message = try DispatcherStage.message(retry, due: due)
                let stat = deferred ? "deferred" : "failed-attempts"
                arguments += [Array(stat.utf8), Array("retry".utf8), Array(String(due).utf8), message]
            } catch {
                // As `DispatcherStage.scheduled`: dead-lettered with the reason, never an empty message.
                arguments += Self.dead(retry, reason: DispatcherStage.unencodable(error))
            }
        case .dead(let retry, let reason):
            arguments += Self.dead(retry, reason: reason)
        }
        let keys = [queue.dueKey, queue.itemsKey, StageKeys.dispatcherStats(partition), StreamNames.deliveriesDead(partition)]
        while WallClock.nowMilliseconds() < leaseDue {
            do {
                return try await Self.script.run(keys: keys, arguments: arguments, on: connection).int == 1
            } catch {
                logger.warning(
                    "cannot write a late delivery outcome, retrying", metadata: ["error": "\(error)", "delivery": "\(id)"])
                try? await Task.sleep(for: .milliseconds(500))
            }
        }
        return false
    }

    /// KEYS: the retry queue's due set and items hash, the stats hash, the dead-letter stream.
    /// ARGV: id, the in-flight record's due time, the stats field, then `retry` due message, or `dead`
    /// and the dead letter's fields.
    static let script = RedisScript(
        """
        local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
        if not score or tonumber(score) ~= tonumber(ARGV[2]) then return 0 end
        if ARGV[4] == 'retry' then
          redis.call('ZADD', KEYS[1], ARGV[5], ARGV[1])
          redis.call('HSET', KEYS[2], ARGV[1], ARGV[6])
        else
          redis.call('ZREM', KEYS[1], ARGV[1])
          redis.call('HDEL', KEYS[2], ARGV[1])
          if ARGV[4] == 'dead' then redis.call('XADD', KEYS[4], '*', unpack(ARGV, 5)) end
        end
        redis.call('HINCRBY', KEYS[3], ARGV[3], 1)
        return 1
        """)
}

/// A count of things under way and a bounded wait until none is: the late attempts a stopping
/// dispatcher lets finish, a batch's commit (one thing: its transaction), a batch's attempts.
final class Countdown: Sendable {
    private let state: Mutex<(count: Int, waiters: [UUID: CheckedContinuation<Bool, Never>])>

    init(_ count: Int = 0) { state = Mutex((count, [:])) }

    func begin() { state.withLock { $0.count += 1 } }

    func end() {
        let waiters = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.count = max(0, state.count - 1)
            guard state.count == 0 else { return [] }
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: true) }
    }

    /// True once none is under way; false if `timeout` passes first.
    @discardableResult
    func wait(within timeout: Duration) async -> Bool {
        let id = UUID()
        return await withCheckedContinuation { continuation in
            let idle = state.withLock { state in
                if state.count == 0 { return true }
                state.waiters[id] = continuation
                return false
            }
            if idle { return continuation.resume(returning: true) }
            Task {
                try? await Task.sleep(for: timeout)
                state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(returning: false)
            }
        }
    }
}

/// The answers of a batch's attempts as they come, and a wait for them bounded by a deadline. An
/// attempt to a slow destination is released: the wait does not count it (its answer is still taken
/// if it comes first).
final class BatchAnswers: Sendable {
    private let state: Mutex<(answers: [PostbackDelivery.Answer?], counted: [Bool])>
    private let remaining: Countdown

    init(count: Int) {
        state = Mutex((Array(repeating: nil, count: count), Array(repeating: true, count: count)))
        remaining = Countdown(count)
    }

    func set(_ index: Int, _ answer: PostbackDelivery.Answer) {
        uncount(index) { $0.answers[index] = answer }
    }

    /// Stops counting attempt `index`: its destination is slow.
    func release(_ index: Int) {
        uncount(index) { _ in }
    }

    private func uncount(_ index: Int, _ change: (inout (answers: [PostbackDelivery.Answer?], counted: [Bool])) -> Void) {
        let counted = state.withLock { state in
            change(&state)
            defer { state.counted[index] = false }
            return state.counted[index]
        }
        if counted { remaining.end() }
    }

    /// The answers so far once every counted attempt answered or `timeout` passed (nil: still under way).
    func collect(within timeout: Duration) async -> [PostbackDelivery.Answer?] {
        await remaining.wait(within: timeout)
        return state.withLock { $0.answers }
    }
}
