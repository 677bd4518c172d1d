import AttributionModel
import CryptoPrimitives
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceRuntime
import TestSupport
import Testing

extension PipelineSuites {
    /// Redis replicates asynchronously: ingest answers 202 only once `INGEST_WAIT_REPLICAS` replicas hold
    /// the event, and 503 `replication-timeout` (with `Retry-After`) when they do not in time.
    @Suite("Durability: 202 once a replica holds the event")
    struct DurabilityTests {
        let http = HTTPTestClient()

        static func impression() -> String {
            let key = P256.Signing.PrivateKey()
            let jws = HostileInputTests.jws(
                header: #"{"alg":"ES256","kid":"\#(HostileInputTests.network)"}"#, payload: HostileInputTests.payload(),
                key: key)
            return HostileInputTests.impressionBody(jws)
        }

        /// A replica of `primary`, once the primary sees it online.
        static func attachedReplica(of primary: RedisServer) async throws -> RedisServer {
            let replica = try await RedisServer.start(arguments: ["--replicaof", "127.0.0.1", String(primary.port)])
            let attached = try await eventually(timeout: .seconds(15)) {
                let info = try await primary.connect().send(RedisCommand("INFO", "replication")).string ?? ""
                return info.contains("connected_slaves:1") && info.contains("state=online")
            }
            guard attached else {
                replica.stop()
                throw TestSupportError("the replica did not attach")
            }
            return replica
        }

        @Test func ingestWaitsForAReplicaBeforeAcknowledging() async throws {
            let primary = try await RedisServer.start()
            defer { primary.stop() }
            let pipeline = try PipelineProcesses(
                redis: primary, timeScale: 1,
                extraEnvironment: ["INGEST_WAIT_REPLICAS": "1", "INGEST_WAIT_TIMEOUT_MS": "200"], only: ["ingest"],
                inProcess: true)
            defer { pipeline.stop() }
            try #require(try await http.waitUntilUp("\(pipeline.ingestURL)/health"), "ingest started\n\(pipeline.logs())")
            let url = "\(pipeline.ingestURL)/v1/impressions"

            // No replica: the event is written but nobody confirms it. The answer names the written event,
            // and so do a batch's items.
            let first = Self.impression()
            let unconfirmed = try await http.send(
                HTTPClientRequestBuilder(method: "POST", url: url, body: first, idempotencyKey: "durable-1"))
            #expect(unconfirmed.status == 503, "\(unconfirmed.json)")
            #expect(unconfirmed.json["reason"] as? String == "replication-timeout")
            #expect(unconfirmed.retryAfter == "1")
            let written = try #require(unconfirmed.json["event-identifier"] as? String, "\(unconfirmed.json)")
            let batch = try await http.send(
                HTTPClientRequestBuilder(
                    method: "POST", url: url + "/batch", body: "[\(Self.impression()),\(Self.impression())]",
                    idempotencyKey: "durable-batch"))
            let items = batch.json["results"] as? [[String: Any]] ?? []
            #expect(items.map { $0["reason"] as? String } == ["replication-timeout", "replication-timeout"], "\(batch.json)")
            #expect(Set(items.compactMap { $0["event-identifier"] as? String }).count == 2, "\(batch.json)")
            #expect(batch.retryAfter == "1")

            let replica = try await Self.attachedReplica(of: primary)
            defer { replica.stop() }
            // A replica that has just come online may still miss one 200 ms WAIT on a loaded machine; the
            // documented answer is to retry with the same Idempotency-Key, which waits again and then
            // answers the first event's id (the event was written once).
            let body = Self.impression()
            var confirmed = try await http.send(
                HTTPClientRequestBuilder(method: "POST", url: url, body: body, idempotencyKey: "durable-2"))
            var retries = 0
            while confirmed.status == 503, confirmed.json["reason"] as? String == "replication-timeout", retries < 20 {
                retries += 1
                confirmed = try await http.send(
                    HTTPClientRequestBuilder(method: "POST", url: url, body: body, idempotencyKey: "durable-2"))
            }
            #expect(confirmed.status == 202, "\(confirmed.json) after \(retries) retries")
            let id = try #require(confirmed.json["event-identifier"] as? String)
            // On the replica at the moment of the 202, not some time later.
            let onReplica = try await streamRecords(StreamNames.events, on: replica.connect()).compactMap(\.message)
            #expect(onReplica.contains { $0.contains(id) }, "the acknowledged event is on the replica")
            #expect(onReplica.filter { $0.contains(id) }.count == 1, "retries wrote the event once")

            // The first event's keyed retry, now confirmed, answers the id its 503 named.
            var retried = try await http.send(
                HTTPClientRequestBuilder(method: "POST", url: url, body: first, idempotencyKey: "durable-1"))
            for _ in 0..<20 where retried.status == 503 {
                retried = try await http.send(
                    HTTPClientRequestBuilder(method: "POST", url: url, body: first, idempotencyKey: "durable-1"))
            }
            #expect(retried.status == 202, "\(retried.json)")
            #expect(retried.json["event-identifier"] as? String == written)
        }

        /// What asynchronous replication can lose, shown: the replica is promoted while cut off from its
        /// primary (what a failover does to a partitioned primary), and the old primary, not knowing yet,
        /// still takes writes. With `INGEST_WAIT_REPLICAS=0` ingest acknowledges such an event with 202, and
        /// the promoted replica, which the pipeline goes on with, never has it: an acknowledged event lost.
        /// With 1, the same write is answered 503 `replication-timeout`: the client knows it is not safe.
        @Test func anAcknowledgementWithoutAReplicaCanBeLostInAFailover() async throws {
            let primary = try await RedisServer.start()
            defer { primary.stop() }
            let replica = try await Self.attachedReplica(of: primary)
            defer { replica.stop() }
            func ingest(waitReplicas: Int) throws -> PipelineProcesses {
                try PipelineProcesses(
                    redis: primary, timeScale: 1,
                    extraEnvironment: ["INGEST_WAIT_REPLICAS": String(waitReplicas), "INGEST_WAIT_TIMEOUT_MS": "200"],
                    only: ["ingest"], inProcess: true)
            }
            // Each pipeline sets up ingest's Redis user with a password of its own: one at a time.
            let unsafe = try ingest(waitReplicas: 0)
            defer { unsafe.stop() }
            try #require(try await http.waitUntilUp("\(unsafe.ingestURL)/health"), "ingest started\n\(unsafe.logs())")
            let kept = try await http.send(
                HTTPClientRequestBuilder(method: "POST", url: "\(unsafe.ingestURL)/v1/impressions", body: Self.impression()))
            #expect(kept.status == 202, "\(kept.json)")
            let replicated = try await eventually(timeout: .seconds(10)) {
                try await streamRecords(StreamNames.events, on: replica.connect()).count == 1
            }
            try #require(replicated, "the replica follows")

            // The failover: the replica is promoted, cut off from the primary, which still takes writes.
            #expect(try await replica.connect().send(RedisCommand("REPLICAOF", "NO", "ONE")) == .status("OK"))
            let lost = try await http.send(
                HTTPClientRequestBuilder(method: "POST", url: "\(unsafe.ingestURL)/v1/impressions", body: Self.impression()))
            #expect(lost.status == 202, "INGEST_WAIT_REPLICAS=0 acknowledges on the primary alone: \(lost.json)")
            unsafe.stop()
            let safe = try ingest(waitReplicas: 1)
            defer { safe.stop() }
            try #require(try await http.waitUntilUp("\(safe.ingestURL)/health"), "ingest started\n\(safe.logs())")
            let refused = try await http.send(
                HTTPClientRequestBuilder(method: "POST", url: "\(safe.ingestURL)/v1/impressions", body: Self.impression()))
            #expect(refused.status == 503 && refused.json["reason"] as? String == "replication-timeout", "\(refused.json)")

            let lostID = try #require(lost.json["event-identifier"] as? String)
            let onPrimary = try await streamRecords(StreamNames.events, on: primary.connect()).compactMap(\.message)
            let onPromoted = try await streamRecords(StreamNames.events, on: replica.connect()).compactMap(\.message)
            #expect(onPrimary.contains { $0.contains(lostID) }, "the old primary wrote it")
            #expect(!onPromoted.contains { $0.contains(lostID) }, "the promoted replica, which carries on, never had it")
            #expect(onPromoted.count == 1, "what was acknowledged before the failover survived it")
        }
    }
}
