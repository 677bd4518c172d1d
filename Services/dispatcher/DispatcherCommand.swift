import AttributionModel
import Delivery
import NIOCore
import RedisStreams
import ServiceRuntime

/// dispatcher: signs due postbacks (it alone holds the key), POSTs them, retries failures on the
/// documented schedule and dead-letters what never got through. It publishes its public keys to the
/// registry, where ingest serves them as the JWKS.
@main
struct DispatcherCommand {
    static func main() async throws {
        try await PipelineService.main(
            ServiceHelp(
                name: "dispatcher",
                summary:
                    "signs due postbacks (it alone holds the key), POSTs them to the ad network and the advertiser's copy endpoint, retries failures up to 9 times within 9 days and dead-letters the rest."
            )
        ) { service in
            // Every setting is read before Redis is: a bad one stops the dispatcher with its one line at
            // once, not after it waited for Redis, nor after it published keys it will never sign with.
            let timeout = try service.environment.value(.deliveryTimeoutMilliseconds)
            let perHost = try service.environment.value(.deliveryConcurrencyPerHost)
            let allowList = try service.environment.value(.postbackURLAllowList)
            let registryCacheMilliseconds = try service.environment.value(.registryCacheMilliseconds)
            let publicSuffixes = try PublicSuffixListFile.load(service.environment)
            let grace = KeySetPublication.grace(try service.environment.value(.signingKeyGraceHours), policy: service.policy)
            let signer = try PostbackSigner.load(service.environment, logger: service.logger)
            let heartbeat = KeyHeartbeat(
                keys: [signer.production, signer.development], connection: service.connection(), grace: grace,
                clock: service.clock)
            try await RedisRetry.untilAnswered("cannot publish the signing keys to Redis, retrying", logger: service.logger) {
                try await heartbeat.publish()
            }

            // Only the checked URL is ever contacted: a 3xx is a failed attempt (retried, then dead-lettered),
            // never followed to a destination the guard did not see (`PostbackPoster` follows nothing).
            let poster = try PostbackPoster(idleTimeout: .seconds(60))
            let lateOutcomes = LateOutcomes(connection: service.connection(), logger: service.logger)
            let lanes = DestinationLanes(
                limit: perHost, timeout: Milliseconds(timeout), policy: service.policy, clock: service.clock)
            let stage = DispatcherStage(
                step: DispatcherStep(policy: service.policy, publicSuffixes: publicSuffixes), signer: signer,
                delivery: PostbackDelivery(
                    poster: poster, timeout: .milliseconds(Int64(timeout)),
                    destinations: DestinationResolver(policy: allowList),
                    lanes: lanes),
                partitioning: service.partitioning,
                registryCache: RegistryCache(maxAge: .milliseconds(registryCacheMilliseconds)),
                lateOutcomes: lateOutcomes,
                clock: service.clock)
            do {
                let workers = try service.workers(stream: StreamNames.postbacks, group: ConsumerGroups.dispatcher) { stage }
                try await service.run(
                    services: workers + [
                        try service.timerLoop([DelayedQueues.deliveryRetries]),
                        heartbeat,
                        CircuitReport(
                            lanes: lanes, replica: try service.environment.value(.consumerName), connection: service.connection(),
                            clock: service.clock),
                    ])
            } catch {
                await poster.shutdown()
                throw error
            }
            // Attempts that outlived their batch end within the delivery timeout: their outcomes are
            // written before the POSTs' connections close (else their in-flight records would count them
            // as failed attempts and send them again).
            await lateOutcomes.pending.wait(within: .milliseconds(Int64(timeout) + 1_000))
            await poster.shutdown()
        }
    }
}
