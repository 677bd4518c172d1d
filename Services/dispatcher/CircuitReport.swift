import AttributionModel
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceLifecycle
import ServiceRuntime

/// Writes this replica's open circuits under `StageKeys.dispatcherCircuits` every few seconds (its field
/// removed while none is open, and at shutdown), so `attribution status` and every service's gauges show
/// a destination that is held back, whichever replica holds it.
struct CircuitReport: Service {
    let lanes: DestinationLanes
    let replica: String
    let connection: RedisConnection
    let clock: @Sendable () -> Milliseconds

    func report() async throws {
        let circuits = await lanes.openCircuits().map {
            OpenCircuits.Circuit(destination: $0.destination, probeAt: $0.probeAt, failures: $0.failures)
        }
        if circuits.isEmpty {
            _ = try await connection.send(RedisCommand("HDEL", StageKeys.dispatcherCircuits, replica))
        } else {
            let report = OpenCircuits(replica: replica, reportedAt: clock(), circuits: circuits)
            let json = String(decoding: try JSONCoding.encoder.encode(report), as: UTF8.self)
            _ = try await connection.send(RedisCommand("HSET", StageKeys.dispatcherCircuits, replica, json))
        }
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: OpenCircuits.interval)
                if Task.isCancelled { break }
                // A missed report is written on the next round; a stale one is ignored by its age.
                try? await report()
            }
        }
        _ = try? await connection.send(RedisCommand("HDEL", StageKeys.dispatcherCircuits, replica))
        await connection.close()
    }
}
