// swift-tools-version:6.2
import Foundation
import PackageDescription

// The OpenAPI document as a client meets it, in a package of its own so that neither OpenAPIKit nor
// swift-openapi-generator (its plugin and the generator it builds) enters the pipeline's own build: a
// newcomer's first `swift build` compiled them for nothing, a third of its CPU time. The test command
// runs it (`swift test --package-path Tests/OpenAPIClient`) on the executables the pipeline built.

// The pipeline, two folders up. A package named by path is known by its folder's name, whatever the
// clone was called.
let pipeline = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

let package = Package(
    name: "openapi-client-tests",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: pipeline.path),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/mattpolzin/OpenAPIKit.git", from: "6.4.0"),
        .package(url: "https://github.com/apple/swift-openapi-generator.git", from: "1.14.3"),
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
        .package(url: "https://github.com/apple/swift-openapi-urlsession.git", from: "1.4.0"),
    ],
    targets: [
        // Valid OpenAPI 3.1 by OpenAPIKit's reading, and a client generated from it (the generator's
        // plugin, from `openapi.json` here, a link to the service's document) driving running services.
        .testTarget(
            name: "OpenAPIClientTests",
            dependencies: [
                .product(name: "AttributionModel", package: pipeline.lastPathComponent.lowercased()),
                .product(name: "AttributionCrypto", package: pipeline.lastPathComponent.lowercased()),
                .product(name: "TestSupport", package: pipeline.lastPathComponent.lowercased()),
                .product(name: "CryptoPrimitives", package: pipeline.lastPathComponent.lowercased()),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "OpenAPIKit", package: "OpenAPIKit"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIURLSession", package: "swift-openapi-urlsession"),
            ],
            path: "Tests/OpenAPIClientTests",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")],
            plugins: [.plugin(name: "OpenAPIGenerator", package: "swift-openapi-generator")]
        )
    ]
)
