import ArgumentParser
import AttributionModel
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceRuntime
import ToolSupport

/// `attribution stored KEY`: what a stage keeps for itself in compact binary (private to the stage, not
/// a message) printed as JSON, so that an operator never needs the pipeline's decoder to look at one: a
/// device's attribution state, a conversion's postback plan, or the postbacks a held queue waits with.
struct StoredCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stored",
        abstract: "Print a stored device state, postback plan or held-postback queue as JSON.",
        discussion: """
            KEY is a device's attribution state (winner:device:{p03}:<app>:<device>, which names the device), \
            a conversion's postback plan (scheduler:plan:{p03}:<conversion>; a finished one prints \
            {"finished": true}) or a held-postback queue (scheduler:held:w0:{p03}:due). A state or a plan prints \
            as one JSON object; a held queue as one line per postback, earliest due first: {"due", "message"} with \
            the postback.due message it is released as.
            """)

    @Argument(help: "The key: a device state, a postback plan or a held-postback queue.")
    var key: String

    @Option(help: "A held queue: at most this many postbacks, earliest due first.")
    var limit = 100

    @OptionGroup var redis: RedisOptions

    func validate() throws {
        guard limit > 0 else { throw ValidationError("--limit must be positive") }
        guard Kind(key) != nil else {
            throw ValidationError(
                "\(key) is not a stored state: name a winner:device:…, scheduler:plan:… or scheduler:held:w…:due key")
        }
    }

    enum Kind {
        case deviceState, plan, heldQueue

        init?(_ key: String) {
            if key.hasPrefix("winner:device:") {
                self = .deviceState
            } else if key.hasPrefix("scheduler:plan:") {
                self = .plan
            } else if key.hasPrefix("scheduler:held:w"), key.hasSuffix(":due") {
                self = .heldQueue
            } else {
                return nil
            }
        }
    }

    func run() async throws {
        let connection = try redis.connect(label: "stored")
        do {
            for line in try await self.lines(on: connection) { FileHandle.standardOutput.write(line + Data("\n".utf8)) }
        } catch {
            await connection.close()
            throw error
        }
        await connection.close()
    }

    private func lines(on connection: RedisConnection) async throws -> [Data] {
        switch Kind(key) {
        case .deviceState?:
            return [
                try JSONCoding.encoder.encode(
                    try CompactCoding.decode(DeviceAttributionState.self, from: try await blob(connection)))
            ]
        case .plan?:
            let bytes = try await blob(connection)
            if bytes == StageKeys.finishedPlanMarker { return [Data(#"{"finished":true}"#.utf8)] }
            return [try JSONCoding.encoder.encode(try CompactCoding.decode(PostbackPlan.self, from: bytes))]
        case .heldQueue?:
            let flat = try await connection.send(RedisCommand("ZRANGE", key, "0", String(limit - 1), "WITHSCORES")).elements
            return try stride(from: 0, to: flat.count - 1, by: 2).map { index in
                let message = try Envelope.released(flat[index].bytes ?? []).encoded()
                let due = flat[index + 1].string.flatMap(Double.init).map { Int64($0) } ?? 0
                return Data(#"{"due":\#(due),"message":"#.utf8) + Data(message) + Data("}".utf8)
            }
        case nil:
            return []
        }
    }

    /// The key's value; a missing key is an error naming it.
    private func blob(_ connection: RedisConnection) async throws -> [UInt8] {
        guard let bytes = try await connection.send(RedisCommand("GET", key)).bytes else {
            throw CommandError("no such key: \(key)")
        }
        return bytes
    }
}
