import AttributionModel
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceRuntime

/// One batch: WATCH and GET the state of every device it touches (and the re-engagement history of
/// devices with a re-engagement), run the model's `WinnerStep` per message, then write the states,
/// settling conversions, cap records, refusals, the `attributions` output and the ack at once. A
/// replica racing on the same device makes EXEC fail, and the batch is redone from fresh state.
struct AttributionWinnerStage: StreamStage {
    let step: WinnerStep
    let partitioning: Partitioning
    let clock: @Sendable () -> Milliseconds

    /// The batch decoded once, with the states it touches in first-seen order.
    struct Batch: Sendable {
        var envelopes: [Envelope?]
        var partitions: [Partition]
        var scopes: [WinnerStep.Scope]
        var reengagementDevices: [String]
        /// Where the verifier wrote each entry (ms of its id): read from `verified` only.
        var written: [Milliseconds?]
        /// The partitions of a `winner:settled` batch, each once: how far `verified` is finished there
        /// decides whether a settled conversion waits (`WinnerStep.VerifiedPosition`).
        var settledPartitions: [Partition]
    }

    func prepare(_ entries: [StreamEntry]) -> Batch {
        let envelopes = entries.map { try? Envelope.decode($0.message) }
        var seenScopes = Set<WinnerStep.Scope>()
        var seenDevices = Set<String>()
        return Batch(
            envelopes: envelopes, partitions: entries.map { partitioning[$0.partition] },
            scopes: envelopes.compactMap { $0.flatMap(WinnerStep.scope(of:)) }.filter { seenScopes.insert($0).inserted },
            reengagementDevices: envelopes.compactMap { $0.flatMap(WinnerStep.reengagementDevice(of:)) }
                .filter { seenDevices.insert($0).inserted },
            written: entries.map {
                step.input == .verified ? StreamTrim.EntryID($0.id).map { Milliseconds($0.milliseconds) } : nil
            },
            settledPartitions: step.input == .settled
                ? Array(Set(entries.map(\.partition))).sorted().map { partitioning[$0] } : [])
    }

    func reads(for batch: Batch) -> StageReads {
        // WATCHed: a replica racing on the same device (or the same device's caps) redoes its batch.
        // Every message of a device is in the device's partition, so its keys are too.
        let states = batch.scopes.map { DeviceKeys.winnerState($0, in: partitioning.of(device: $0.device)) }
        let caps = batch.reengagementDevices.map {
            DeviceKeys.winnerReengagements(device: $0, in: partitioning.of(device: $0))
        }
        // Not watched: `verified` only moves on, and a settled conversion read too early just waits. First
        // the oldest event the verifier holds, so that `verified`'s last entry, read after it in the same
        // slot, is at or past the verified form of every event the verifier had finished by then.
        let progress = batch.settledPartitions.flatMap {
            [RedisCommand("XPENDING", StreamNames.events($0), ConsumerGroups.verifier.name, "-", "+", "1")]
                + GroupProgress.commands(stream: StreamNames.verified($0), group: ConsumerGroups.attributionWinner.name)
        }
        return StageReads(
            watch: states + caps,
            commands: states.map { RedisCommand("GET", $0) } + caps.map { RedisCommand("ZRANGE", $0, "0", "-1", "WITHSCORES") }
                + progress)
    }

    func decide(_ batch: Batch, state: [RedisReply]) async -> [StageOutcome] {
        var states: [WinnerStep.Scope: DeviceAttributionState] = [:]
        var unreadable = Set<WinnerStep.Scope>()
        for (scope, reply) in zip(batch.scopes, state) where reply.bytes != nil {
            // A state that cannot be read fails its device's messages (dead letters, with the reason)
            // rather than starting the device afresh, which would forget its impressions and caps.
            if let decoded = reply.decoded(as: DeviceAttributionState.self) {
                states[scope] = decoded
            } else {
                unreadable.insert(scope)
            }
        }
        var reengagements: [String: [Milliseconds]] = [:]
        for (device, reply) in zip(batch.reengagementDevices, state.dropFirst(batch.scopes.count)) {
            let flat = reply.elements
            reengagements[device] = stride(from: 1, to: flat.count, by: 2).compactMap { flat[$0].int }
        }
        let now = clock()
        var readThrough: [Partition: WinnerStep.VerifiedPosition] = [:]
        let progressReplies = Array(state.dropFirst(batch.scopes.count + batch.reengagementDevices.count))
        for (index, partition) in batch.settledPartitions.enumerated() where progressReplies.count >= 4 * index + 4 {
            let held = progressReplies[4 * index].elements.first?.elements.first?.string.flatMap(StreamTrim.EntryID.init)
            let progress = GroupProgress(
                groups: progressReplies[4 * index + 1], pending: progressReplies[4 * index + 2],
                last: progressReplies[4 * index + 3],
                group: ConsumerGroups.attributionWinner.name)
            readThrough[partition] = progress.map {
                .readThrough(
                    Milliseconds($0.finishedThrough(now: UInt64(max(0, now)))),
                    verifierThrough: held.map { Milliseconds($0.milliseconds) - 1 },
                    lastWritten: GroupProgress.lastEntry(progressReplies[4 * index + 3]).map { Milliseconds($0.milliseconds) })
            }
        }
        return zip(batch.envelopes, batch.partitions).enumerated().map { index, pair -> StageOutcome in
            let (envelope, partition) = pair
            if let envelope, case .testPostbacksRequested = envelope.body {
                // No device, no state: on to the scheduler as it came.
                return StageOutcome.encoding {
                    [StreamCommands.add(StreamNames.attributions(partition), message: try envelope.encoded())]
                }
            }
            guard let envelope, let scope = WinnerStep.scope(of: envelope) else {
                return .failed("attribution-winner takes verified impressions, conversions, updates and activity")
            }
            guard !unreadable.contains(scope) else { return .failed("the device's attribution state in Redis cannot be read") }
            let device = WinnerStep.reengagementDevice(of: envelope)
            let history = device.flatMap { reengagements[$0] } ?? []
            let position: WinnerStep.VerifiedPosition? =
                batch.written[index].map { .writtenAt($0) } ?? readThrough[partition]
            switch step.step(
                states[scope] ?? DeviceAttributionState(), message: envelope, reengagements: history, now: now, verified: position
            )
            {
            case .retry(let reason):
                return .failed(reason)
            case .done(let effects):
                states[scope] = effects.state
                if let device, let record = effects.reengagement { reengagements[device, default: []].append(record.time) }
                // A refused conversion is also listed for its app, after the commit (that list has no partition).
                return StageOutcome.encoding(
                    counts: effects.counts.map(StageCount.init),
                    after: effects.allRejections.flatMap { RejectionLog.append($0.rejection, to: $0.log) }
                ) { try commands(for: effects, scope: scope, in: partition) }
            }
        }
    }

    /// The step's effects as Redis commands: state, settling conversion, cap record, refusal, outputs.
    func commands(for effects: WinnerStep.Effects, scope: WinnerStep.Scope, in partition: Partition) throws -> [RedisCommand] {
        // Compact binary, not JSON: this blob is read and written on every event of the device, where JSON cost a fifth of the stage's CPU.
        let state = CompactCoding.encode(effects.state)
        var commands = [
            RedisCommand.set(DeviceKeys.winnerState(scope, in: partition), state, expiringAfter: effects.keepStateFor)
        ]
        if let (message, dueAt) = effects.settle {
            commands += DelayedQueues.settlingConversions(partition).schedule(
                id: message.id, dueAtMilliseconds: dueAt, message: try message.encoded())
        }
        if let record = effects.reengagement {
            let key = DeviceKeys.winnerReengagements(device: scope.device, in: partition)
            commands += [
                RedisCommand("ZADD", key, String(record.time), record.conversionIdentifier),
                RedisCommand("ZREMRANGEBYSCORE", key, "-inf", String(record.dropThrough)),
                RedisCommand("PEXPIRE", key, String(record.keepFor)),
            ]
        }
        if let (tag, outcome) = effects.outcome {
            commands.append(
                RedisCommand(
                    "SET", StageKeys.reengagementOutcome(conversionTag: tag, in: partition), outcome.recorded, "PX",
                    String(ConversionOutcome.keptMilliseconds)))
        }
        for refusal in effects.allRejections { commands.append(try refusal.rejection.entry(at: refusal.at, in: partition)) }
        return commands
            + (try effects.outputs.map { StreamCommands.add(StreamNames.attributions(partition), message: try $0.encoded()) })
    }
}
