import AttributionModel

// How ingest spends Redis round trips and when it refuses work: batch bodies, the connection pool that
// publishes are coalesced over, and the overload bounds (503/429 at once instead of a queue).

extension ConfigurationKey.Typed where Value == Int {
    public static var maxBatchBodyBytes: Self {
        .integer(
            "MAX_BATCH_BODY_BYTES", unit: "bytes", default: 4_194_304, range: 1_024...67_108_864, services: ["ingest"],
            "Largest body accepted on the batch routes (`/v1/…/batch`, up to 1,000 items); beyond it 413 `body-too-large`.")
    }

    public static var ingestRedisConnections: Self {
        .integer(
            "INGEST_REDIS_CONNECTIONS", default: 0, range: 0...64, services: ["ingest"],
            "Connections ingest publishes events over; 0: one per core (on one Redis, one per HTTP event loop, so a request's round trip stays on its own loop's connection; on Redis Cluster, each with its own thread). Requests that arrive while their connection is busy are coalesced: their writes go together in the next pipelined round trip. More connections make more, smaller round trips: in one capacity-search probe on 2 cores, 4 connections instead of 2 cost ingest 10 % more CPU per single-event request and Redis 30 % more."
        )
    }

    public static var ingestMaxInFlight: Self {
        .integer(
            "INGEST_MAX_IN_FLIGHT", unit: "events", default: 2_000, range: 1...1_000_000, services: ["ingest"],
            "Events ingest holds in flight (parsed, not yet answered). Past it a request is answered at once with 503 `overloaded` and `Retry-After` (a batch larger than the bound is still taken when nothing else is in flight)."
        )
    }

    public static var ingestMaxEventsLag: Self {
        .integer(
            "INGEST_MAX_EVENTS_LAG", unit: "events", default: 200_000, range: 0...1_000_000_000, services: ["ingest"],
            "The lag ceiling: while the verifier has more than this many events of `events` unread or unacknowledged (summed over partitions, read every 250 ms, plus what this ingest wrote since the reading and is writing), event routes answer 503 `pipeline-lagging` with `Retry-After`. 0 turns it off."
        )
    }

    public static var ingestCallerRate: Self {
        .integer(
            "INGEST_CALLER_RATE", unit: "events/s", default: 0, range: 0...10_000_000, services: ["ingest"],
            "Per-caller token bucket, per ingest replica: events a second one ad network (impressions, by the JWS `kid` or SKAdNetwork `ad-network-id` the impression claims) or one app (conversions, updates, activity, by its key) may send; past it 429 `rate-limited` with `Retry-After`. 0 means no limit."
        )
    }

    public static var ingestCallerBurst: Self {
        .integer(
            "INGEST_CALLER_BURST", unit: "events", default: 0, range: 0...10_000_000, services: ["ingest"],
            "The bucket's size: events a caller may send at once after a quiet spell. 0 means one second of `INGEST_CALLER_RATE` (at least 1,000, so one full batch always fits)."
        )
    }
}

extension ConfigurationKey.Typed where Value == Milliseconds {
    public static var ingestQueueTargetMilliseconds: Self {
        .milliseconds(
            "INGEST_QUEUE_TARGET_MS", default: 20, range: 1...10_000, services: ["ingest"],
            "The queueing ingest tolerates: while a write has waited longer than this for a free Redis connection (or a round trip has gone on ten times longer), or for 100 ms even the fastest request (per event) took longer or ingest's own 10 ms timers (on its event loops and its thread pool) all fired that late, new event requests are answered at once with 503 `overloaded` and `Retry-After`, so accepted requests stay fast when more is offered than ingest or Redis can take."
        )
    }
}
