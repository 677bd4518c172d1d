// swift-tools-version:5.4
import PackageDescription

// libFuzzer harnesses for the parsers, kept apart from the root package so its `swift build` and
// `swift test` never see fuzzer flags. Build and run them with scripts/fuzz.sh: it passes
// -sanitize=fuzzer,address to every Swift module, because the code under test must carry the coverage
// instrumentation, not only the harness.
//
// Tools version 5.4 on purpose: from 5.5 on, SwiftPM renames an executable's entry point to
// `<module>_main` and links `main` to it, which a harness without `main` (libFuzzer brings its own)
// cannot satisfy. The harnesses are Swift 5 mode; the code under test keeps its own settings.
let harnessSettings: [SwiftSetting] = [.unsafeFlags(["-parse-as-library"])]

let package = Package(
    name: "attribution-pipeline-fuzz",
    dependencies: [
        .package(name: "attribution-pipeline", path: ".."),
    ],
    targets: [
        // The fixed keys the committed seeds are signed with, and the verifier's impression checks.
        .target(
            name: "FuzzSupport",
            dependencies: [
                .product(name: "AttributionModel", package: "attribution-pipeline"),
                .product(name: "AttributionCrypto", package: "attribution-pipeline"),
                .product(name: "CryptoPrimitives", package: "attribution-pipeline"),
            ],
            path: "Sources/FuzzSupport"
        ),
        // Compact JWS, AdAttributionKit postback bodies, the verifier's JWS impression path.
        .executableTarget(
            name: "fuzz-jws", dependencies: ["FuzzSupport"], path: "Sources/fuzz-jws", swiftSettings: harnessSettings),
        // SKAdNetwork impressions and postbacks (1.0–4.0), their signatures and keys.
        .executableTarget(
            name: "fuzz-skan", dependencies: ["FuzzSupport"], path: "Sources/fuzz-skan", swiftSettings: harnessSettings),
        // Advertised-app bodies: JSON or property list (XML, and whatever else PropertyListSerialization reads).
        .executableTarget(
            name: "fuzz-plist", dependencies: [.product(name: "AttributionModel", package: "attribution-pipeline")],
            path: "Sources/fuzz-plist", swiftSettings: harnessSettings),
    ]
)
