import AttributionModel
import PipelineCatalog
import ServiceRuntime

/// What admin reads besides `PipelineSettings`.
public struct AdminSettings: Sendable {
    let adminToken: String
    let keyRotationGrace: Milliseconds
    /// Where postback URLs and copy endpoints may point.
    let destinations: DestinationPolicy
    /// The deployment's partitions: where erasure and dead-letter replays look.
    let partitioning: Partitioning
    /// Rotations and replays: the wall clock unless a test sets its own.
    public var clock: @Sendable () -> Milliseconds

    init(
        adminToken: String, keyRotationGrace: Milliseconds = 0, destinations: DestinationPolicy = .init(),
        partitioning: Partitioning = Partitioning(), clock: @escaping @Sendable () -> Milliseconds
    ) {
        self.adminToken = adminToken
        self.keyRotationGrace = keyRotationGrace
        self.destinations = destinations
        self.partitioning = partitioning
        self.clock = clock
    }

    public init(_ environment: ServiceEnvironment, _ common: PipelineSettings) throws {
        adminToken = try environment.secret(.adminToken, orFile: .adminTokenFile)
        keyRotationGrace = KeySetPublication.rotationGrace(try environment.value(.keyRotationGraceHours))
        var destinations = try environment.value(.postbackURLAllowList)
        destinations.publicSuffixes = try PublicSuffixListFile.load(environment)
        self.destinations = destinations
        partitioning = common.partitioning
        clock = { WallClock.nowMilliseconds() }
    }
}
