import AttributionModel
import Delivery
import Logging
import NIOCore
import PipelineCatalog
import RedisStreams
import ServiceRuntime

/// dispatcher: signs due postbacks (it alone holds the key), POSTs them, retries failures on the
/// documented schedule and dead-letters what never got through. It publishes its public keys to the
/// registry, where ingest serves them as the JWKS.
public enum Dispatcher {
    public static let help = ServiceHelp(
        name: "dispatcher",
        summary:
            "signs due postbacks (it alone holds the key), POSTs them to the ad network and the advertiser's copy endpoint, retries failures up to 9 times within 9 days and dead-letters the rest."
    )

    /// What the dispatcher reads besides `PipelineSettings`, its signing keys included: a bad setting
    /// stops it with its one line at once, not after it waited for Redis, nor after it published keys
    /// it will never sign with.
    public struct Settings: Sendable {
        public var deliveryTimeoutMilliseconds: Milliseconds
        public var concurrencyPerHost: Int
        public var registryCacheMilliseconds: Milliseconds
        /// How long a retired signing key stays in the JWKS (scaled).
        public var signingKeyGraceMilliseconds: Milliseconds
        var destinations: DestinationPolicy
        var publicSuffixes: PublicSuffixList
        var signer: PostbackSigner

        public init(_ environment: ServiceEnvironment, _ common: PipelineSettings) throws {
            deliveryTimeoutMilliseconds = Milliseconds(try environment.value(.deliveryTimeoutMilliseconds))
            concurrencyPerHost = try environment.value(.deliveryConcurrencyPerHost)
            destinations = try environment.value(.postbackURLAllowList)
            registryCacheMilliseconds = Milliseconds(try environment.value(.registryCacheMilliseconds))
            publicSuffixes = try PublicSuffixListFile.load(environment)
            signingKeyGraceMilliseconds = KeySetPublication.grace(
                try environment.value(.signingKeyGraceHours), policy: common.policy)
            signer = try PostbackSigner.load(environment, logger: Logger(label: common.name))
        }
    }

    /// Publishes the public keys (waiting for Redis), then assembles the consumer loops on
    /// `postbacks`, the retry queue's timer loop, the key heartbeat, the open-circuit report and the
    /// HTTP listener. Running it ends with the late outcomes written and the HTTP client shut down.
    public static func build(
        _ settings: Settings, service: PipelineService, clock: (@Sendable () -> Milliseconds)? = nil
    ) async throws -> PipelineService.Assembly {
        let clock = clock ?? service.clock
        let timeout = settings.deliveryTimeoutMilliseconds
        let heartbeat = KeyHeartbeat(
            keys: settings.signer.keys, connection: service.connection(),
            grace: settings.signingKeyGraceMilliseconds, clock: clock)
        try await RedisRetry.untilAnswered("cannot publish the signing keys to Redis, retrying", logger: service.logger) {
            try await heartbeat.publish()
        }

        // Only the checked URL is ever contacted: a 3xx is a failed attempt (retried, then dead-lettered),
        // never followed to a destination the guard did not see (`PostbackPoster` follows nothing).
        let poster = try PostbackPoster(idleTimeout: .seconds(60))
        let lateOutcomes = LateOutcomes(connection: service.connection(), logger: service.logger)
        let lanes = DestinationLanes(limit: settings.concurrencyPerHost, timeout: timeout, policy: service.policy, clock: clock)
        let stage = DispatcherStage(
            step: DispatcherStep(policy: service.policy, publicSuffixes: settings.publicSuffixes), signer: settings.signer,
            delivery: PostbackDelivery(
                poster: poster, timeout: .milliseconds(timeout), destinations: DestinationResolver(policy: settings.destinations),
                lanes: lanes),
            partitioning: service.partitioning,
            registryCache: RegistryCache(maxAge: .milliseconds(settings.registryCacheMilliseconds)),
            lateOutcomes: lateOutcomes, clock: clock)
        do {
            let workers = try service.workers(stream: StreamNames.postbacks, group: ConsumerGroups.dispatcher) { stage }
            var assembly = try await service.assemble(
                services: workers + [
                    try service.timerLoop([DelayedQueues.deliveryRetries]),
                    heartbeat,
                    CircuitReport(
                        lanes: lanes, replica: service.settings.worker?.consumerName ?? service.name,
                        connection: service.connection(), clock: clock),
                ])
            // Attempts that outlived their batch end within the delivery timeout: their outcomes are
            // written before the POSTs' connections close (else their in-flight records would count them
            // as failed attempts and send them again).
            assembly.afterwards = {
                await lateOutcomes.pending.wait(within: .milliseconds(timeout + 1_000))
                await poster.shutdown()
            }
            return assembly
        } catch {
            await poster.shutdown()
            throw error
        }
    }
}
