// swift-tools-version:6.2
import PackageDescription

// One settings array for every target (hummingbird's habit): Swift 6 language mode everywhere.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny")
]

let package = Package(
    name: "attribution-pipeline",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "ingest", targets: ["ingest"]),
        .executable(name: "admin", targets: ["admin"]),
        .executable(name: "verifier", targets: ["verifier"]),
        .executable(name: "attribution-winner", targets: ["attribution-winner"]),
        .executable(name: "scheduler", targets: ["scheduler"]),
        .executable(name: "dispatcher", targets: ["dispatcher"]),
        .executable(name: "attribution", targets: ["attribution"]),
        .executable(name: "attribution-bench", targets: ["attribution-bench"]),
        // For the fuzzers in Fuzz/, a separate package that builds these with libFuzzer instrumentation.
        .library(name: "AttributionModel", targets: ["AttributionModel"]),
        .library(name: "AttributionCrypto", targets: ["AttributionCrypto"]),
        .library(name: "CryptoPrimitives", targets: ["CryptoPrimitives"]),
        // For the generated client's tests (Tests/OpenAPIClient, a package of its own): a real
        // redis-server on a free port, and where the built executables are.
        .library(name: "TestSupport", targets: ["TestSupport"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
    ],
    targets: [
        // Debian's libssl-dev (OpenSSL 3): the only cryptography library.
        .systemLibrary(name: "COpenSSL", path: "Shared/COpenSSL", providers: [.apt(["libssl-dev"])]),
        // P-256 ECDSA, SHA-256 and HMAC over it, under swift-crypto's names: swift-crypto's own copy of
        // BoringSSL was a fifth of a first build's CPU for these few calls.
        .target(
            name: "CryptoPrimitives", dependencies: ["COpenSSL"], path: "Shared/CryptoPrimitives", swiftSettings: swiftSettings),
        // Pure model: identifiers, events, envelopes and the rules as pure functions. No I/O.
        // CryptoPrimitives only for the keyed hash of postback identifiers.
        .target(
            name: "AttributionModel", dependencies: ["CryptoPrimitives"],
            path: "Shared/AttributionModel", swiftSettings: swiftSettings),
        // Compact JWS (ES256) and SKAN signatures; keys in PEM and JWK form.
        .target(
            name: "AttributionCrypto",
            dependencies: ["AttributionModel", "COpenSSL", "CryptoPrimitives"],
            path: "Shared/AttributionCrypto",
            swiftSettings: swiftSettings
        ),
        // Debian's libhiredis-dev 0.14.1. No pkgConfig: its .pc adds a flag SwiftPM prohibits.
        .systemLibrary(name: "CHiredis", path: "Shared/CHiredis", providers: [.apt(["libhiredis-dev"])]),
        // Debian's libjemalloc-dev: the allocator of every executable on Linux (ServiceRuntime's `Allocator`).
        .systemLibrary(name: "CJemalloc", path: "Shared/CJemalloc", providers: [.apt(["libjemalloc-dev"])]),
        // Redis streams transport: connections off the cooperative pool, consumer groups, delayed queue.
        .target(
            name: "RedisStreams",
            dependencies: [
                "CHiredis", "TLSClient",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Shared/RedisStreams",
            swiftSettings: swiftSettings
        ),
        // The pipeline's data in Redis, named in one place: partitions, streams, consumer groups, delayed
        // queues, every key shape, each service's ACL rights, the registry cache, the status snapshot.
        .target(
            name: "PipelineCatalog", dependencies: ["AttributionModel", "RedisStreams"], path: "Shared/PipelineCatalog",
            swiftSettings: swiftSettings),
        // What every service shares: configuration, logging, metrics, health, the stage worker loop.
        .target(
            name: "ServiceRuntime",
            dependencies: [
                "AttributionModel", "PipelineCatalog", "RedisStreams",
                .target(name: "CJemalloc", condition: .when(platforms: [.linux])),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Shared/ServiceRuntime",
            swiftSettings: swiftSettings
        ),
        // What ingest's and admin's routes share: the route catalog, request bodies, issued secrets, JSON
        // answers, the stored schemas and test-postback requests.
        .target(
            name: "HTTPAPI",
            dependencies: [
                "AttributionModel", "RedisStreams", "ServiceRuntime", "PipelineCatalog",
                "CryptoPrimitives",
                .product(name: "Hummingbird", package: "hummingbird"),
            ],
            path: "Shared/HTTPAPI",
            swiftSettings: swiftSettings
        ),
        // TLS clients (postbacks over HTTPS, the tools' HTTPS) on the system's OpenSSL: swift-nio-ssl's
        // copy of BoringSSL was 40 % of a first build's CPU.
        .target(
            name: "TLSClient",
            dependencies: ["COpenSSL", .product(name: "NIOCore", package: "swift-nio")],
            path: "Shared/TLSClient",
            swiftSettings: swiftSettings
        ),
        // The dispatcher's HTTP side, a module of its own so tests can drive it: keep-alive POSTs to checked
        // addresses.
        .target(
            name: "Delivery",
            dependencies: [
                "AttributionModel", "TLSClient", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Services/dispatcher/Delivery",
            swiftSettings: swiftSettings
        ),
        // Each service: a library with its settings and `build` (tests call it), and an executable
        // whose `@main` reads the settings and runs what `build` returns.
        .target(
            name: "IngestService",
            dependencies: [
                "AttributionModel", "AttributionCrypto", "HTTPAPI", "RedisStreams", "ServiceRuntime", "PipelineCatalog",
                "CryptoPrimitives",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                // HTTP parts as swift-http-types, for the listener's early refusals (EarlyRefusal).
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            // The OpenAPI document is compiled in as a string literal (OpenAPIDocument+Text.swift, written
            // from it by scripts/embed_openapi.py): served and printed without a resource bundle to ship.
            path: "Services/ingest", exclude: ["Main", "openapi.json"],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "ingest", dependencies: ["IngestService", "ServiceRuntime"], path: "Services/ingest/Main",
            swiftSettings: swiftSettings),
        // The admin API: its own process, port and Redis user, behind the bearer token.
        .target(
            name: "AdminService",
            dependencies: [
                "AttributionModel", "AttributionCrypto", "HTTPAPI", "RedisStreams", "ServiceRuntime", "PipelineCatalog",
                .product(name: "Hummingbird", package: "hummingbird"),
            ],
            path: "Services/admin", exclude: ["Main"],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "admin", dependencies: ["AdminService", "ServiceRuntime"], path: "Services/admin/Main",
            swiftSettings: swiftSettings),
        .target(
            name: "VerifierService",
            dependencies: [
                "AttributionModel", "AttributionCrypto", "RedisStreams", "ServiceRuntime", "PipelineCatalog",
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            path: "Services/verifier", exclude: ["Main"],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "verifier", dependencies: ["VerifierService", "ServiceRuntime"],
            path: "Services/verifier/Main",
            swiftSettings: swiftSettings),
        .target(
            name: "AttributionWinnerService",
            dependencies: [
                "AttributionModel", "RedisStreams", "ServiceRuntime", "PipelineCatalog",
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            path: "Services/attribution-winner", exclude: ["Main"],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "attribution-winner", dependencies: ["AttributionWinnerService", "ServiceRuntime"],
            path: "Services/attribution-winner/Main",
            swiftSettings: swiftSettings),
        .target(
            name: "SchedulerService",
            dependencies: ["AttributionModel", "RedisStreams", "ServiceRuntime", "PipelineCatalog"],
            path: "Services/scheduler", exclude: ["Main"],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "scheduler", dependencies: ["SchedulerService", "ServiceRuntime"],
            path: "Services/scheduler/Main",
            swiftSettings: swiftSettings),
        .target(
            name: "DispatcherService",
            dependencies: [
                "AttributionModel", "AttributionCrypto", "RedisStreams", "ServiceRuntime", "PipelineCatalog", "Delivery",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Services/dispatcher", exclude: ["Main", "Delivery"],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "dispatcher", dependencies: ["DispatcherService", "ServiceRuntime"],
            path: "Services/dispatcher/Main",
            swiftSettings: swiftSettings),
        // The command-line tool for ad networks and operators: keys, signing, receiver, simulation.
        .executableTarget(
            name: "attribution",
            dependencies: [
                "AttributionModel", "AttributionCrypto", "RedisStreams", "ServiceRuntime", "PipelineCatalog", "ToolSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                "CryptoPrimitives",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            path: "Tools/attribution",
            swiftSettings: swiftSettings
        ),
        // What both tools take: the Redis options, a bounded concurrent map, the HTTP client.
        .target(
            name: "ToolSupport",
            dependencies: [
                "RedisStreams", "TLSClient", .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Tools/ToolSupport",
            swiftSettings: swiftSettings
        ),
        // Redis and Redis Cluster as child processes, killed, failed over, resharded and cut apart: the
        // one launcher of the test suites (through TestSupport) and the scripts' runs (attribution-bench redis).
        .target(
            name: "PipelineLaunch",
            dependencies: ["RedisStreams", "TLSClient", .product(name: "Logging", package: "swift-log")],
            path: "Tools/PipelineLaunch",
            swiftSettings: swiftSettings
        ),
        // The benchmark's tool (scripts/bench.sh): offered load, preloaded streams, held postbacks, coding,
        // and the runs' Redis.
        .executableTarget(
            name: "attribution-bench",
            dependencies: [
                "AttributionModel", "AttributionCrypto", "RedisStreams", "ServiceRuntime", "PipelineCatalog", "ToolSupport",
                "PipelineLaunch",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                "CryptoPrimitives",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Tools/attribution-bench",
            swiftSettings: swiftSettings
        ),
        // Test fixtures shared by the suites: a real redis-server on a free port, child processes.
        .target(
            name: "TestSupport",
            dependencies: ["RedisStreams", "AttributionModel", "PipelineLaunch"],
            path: "Tests/TestSupport",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "AttributionModelTests",
            dependencies: ["AttributionModel", "AttributionCrypto", "CryptoPrimitives", "TestSupport"],
            path: "Tests/AttributionModelTests",
            // Read by path (#filePath), not as bundle resources.
            exclude: ["Fixtures/stream-entries-0.1.0.txt", "Fixtures/stored-state-0.1.0.txt"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RedisStreamsTests",
            dependencies: ["RedisStreams", "TestSupport", .product(name: "NIOPosix", package: "swift-nio")],
            path: "Tests/RedisStreamsTests",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PipelineTests",
            dependencies: [
                "AttributionModel", "AttributionCrypto", "RedisStreams", "ServiceRuntime", "PipelineCatalog", "TestSupport",
                "Delivery", "ToolSupport",
                "attribution",
                "IngestService", "AdminService", "VerifierService", "AttributionWinnerService", "SchedulerService",
                "DispatcherService", .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                "TLSClient",
                "CryptoPrimitives",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/PipelineTests",
            swiftSettings: swiftSettings
        ),
        // The services built in-process, against a real redis-server: routes through Hummingbird's
        // in-process client, stages on the test Redis with a clock of the test's.
        .testTarget(
            name: "ServiceTests",
            dependencies: [
                "AttributionModel", "AttributionCrypto", "RedisStreams", "ServiceRuntime", "PipelineCatalog", "TestSupport",
                "IngestService",
                "AdminService", "VerifierService", "AttributionWinnerService", "SchedulerService", "DispatcherService",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                "CryptoPrimitives",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Tests/ServiceTests",
            swiftSettings: swiftSettings
        ),
        // The repository's own checks: compose services ↔ executables, environment ↔ documented keys.
        .testTarget(
            name: "DeploymentTests",
            dependencies: [
                "AttributionModel", "RedisStreams", "ServiceRuntime", "PipelineCatalog", .product(name: "Yams", package: "Yams"),
            ],
            path: "Tests/DeploymentTests",
            swiftSettings: swiftSettings
        ),
    ]
)
