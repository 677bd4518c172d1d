import Foundation
import Testing

/// What Package.swift lets into the main job's build: no package only tests use (their generated
/// client's tests are Tests/OpenAPIClient, a package of its own), admin built without ingest's library,
/// and the benchmark's tool apart from the operators'.
@Suite("Package layout")
struct PackageLayoutTests {
    /// The dependency list of the target called `name`, as Package.swift spells it.
    static func dependencies(of name: String) throws -> String {
        let manifest = try ComposeFileTests.read("Package.swift")
        let declaration = try Regex("\\.(executableTarget|target)\\(\\s*name: \"\(name)\"")
        let start = try #require(manifest.firstRange(of: declaration), "Package.swift declares the target \(name)")
        let rest = manifest[start.upperBound...]
        let end = rest.range(of: "path:")?.lowerBound ?? rest.endIndex
        return String(rest[..<end])
    }

    @Test func testOnlyPackagesStayOutOfTheMainBuild() throws {
        let manifest = try ComposeFileTests.read("Package.swift")
        for package in ["OpenAPIKit", "swift-openapi-generator", "swift-openapi-runtime", "plugins:"] {
            #expect(!manifest.contains(package), "Package.swift names \(package)")
        }
        let separate = try ComposeFileTests.read("Tests/OpenAPIClient/Package.swift")
        #expect(separate.contains("swift-openapi-generator") && separate.contains(".package(path: pipeline.path)"))
    }

    /// What the main job's build compiles for nothing: swift-crypto's and swift-nio-ssl's BoringSSL (the
    /// system's OpenSSL does their calls) and AsyncHTTPClient (only the tests take it, as an independent
    /// client).
    @Test func noExecutableTakesSwiftCryptoOrAsyncHTTPClient() throws {
        let manifest = try ComposeFileTests.read("Package.swift")
        #expect(!manifest.contains("apple/swift-crypto"))
        for executable in try ComposeFileTests.executables() {
            #expect(!(try Self.dependencies(of: executable)).contains("AsyncHTTPClient"), "\(executable)")
        }
        for library in ["ToolSupport", "ServiceRuntime", "DispatcherService", "Delivery", "AttributionCrypto"] {
            #expect(!(try Self.dependencies(of: library)).contains("AsyncHTTPClient"), "\(library)")
        }
        // TLS is the system's OpenSSL (TLSClient): swift-nio-ssl's BoringSSL was 40 % of a first build.
        // Only the tests' AsyncHTTPClient brings it, as its own dependency.
        #expect(!manifest.contains("apple/swift-nio-ssl") && !manifest.contains("NIOSSL"))
    }

    @Test func adminIsBuiltWithoutIngestsLibrary() throws {
        #expect(!(try Self.dependencies(of: "AdminService")).contains("IngestService"))
        let admin = try Self.dependencies(of: "admin")
        #expect(admin.contains("AdminService") && !admin.contains("IngestService"), "\(admin)")
        #expect(!(try Self.dependencies(of: "IngestService")).contains("AdminService"))
    }

    @Test func theBenchmarksToolIsItsOwnExecutable() throws {
        #expect(try ComposeFileTests.executables().contains("attribution-bench"))
        #expect(!(try Self.dependencies(of: "attribution")).contains("attribution-bench"))
        let tool = try FileManager.default.contentsOfDirectory(
            atPath: ComposeFileTests.root.appendingPathComponent("Tools/attribution").path)
        #expect(!tool.contains("Bench"))
    }
}
