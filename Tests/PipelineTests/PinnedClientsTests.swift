import AsyncHTTPClient
import AttributionModel
import Delivery
import Foundation
import ServiceRuntime
import TestSupport
import Testing

/// The dispatcher connects to the address its destination check approved (issue 18, finding 2: DNS
/// rebinding): a pinned client reaches a name no resolver knows, because it never asks one.
@Suite("Pinned delivery clients")
struct PinnedClientsTests {
    @Test func aPinnedClientConnectsToTheCheckedAddressNotToADNSAnswer() async throws {
        let port = try freeLoopbackPort()
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        server.arguments = ["python3", "-m", "http.server", "--bind", "127.0.0.1", String(port)]
        server.currentDirectoryURL = FileManager.default.temporaryDirectory
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        defer { kill(server.processIdentifier, SIGKILL) }  // inherits the runner's blocked SIGTERM

        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .seconds(2), read: .seconds(2))
        configuration.redirectConfiguration = .disallow
        let pinned = PinnedClients(configuration: configuration, drain: .milliseconds(10))
        let loopback = try #require(IPAddress("127.0.0.1"))
        // `.invalid` never resolves (RFC 6761): only the pin can take the request anywhere.
        let url = "http://pinned.invalid:\(port)/"
        var answered = false
        for _ in 0..<50 where !answered {  // the server takes a moment to listen
            let response = try? await pinned.client(for: "pinned.invalid", address: loopback)
                .execute(HTTPClientRequest(url: url), timeout: .seconds(2))
            answered = response?.status == .ok
            if !answered { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(answered, "the pinned client reached 127.0.0.1 for pinned.invalid")

        let plain = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let unpinned = try? await plain.execute(HTTPClientRequest(url: url), timeout: .seconds(2))
        #expect(unpinned == nil, "without the pin the name does not resolve")
        try await plain.shutdown()

        // The same pin reuses its client (and its pooled connections); a new checked address gets a new one.
        let first = pinned.client(for: "pinned.invalid", address: loopback)
        #expect(first === pinned.client(for: "pinned.invalid", address: loopback))
        #expect(first !== pinned.client(for: "pinned.invalid", address: try #require(IPAddress("127.0.0.2"))))
        await pinned.shutdown()
    }

    /// What a POST may connect to: a literal or an allow-listed host as it is, a name only through its
    /// checked answer (`pinned`), nothing private.
    @Test func resolutionSaysWhereAPostMayConnect() async throws {
        let resolver = DestinationResolver(policy: DestinationPolicy(allowList: "receiver:8080"))
        #expect(await resolver.resolve("https://8.8.8.8/p") == .direct)
        #expect(await resolver.resolve("http://receiver:8080/p") == .direct)
        #expect(await resolver.resolve("https://localhost/p") == .refused(.privateAddress))
        #expect(await resolver.resolve("https://[::127.0.0.1]/p") == .refused(.privateAddress))
        #expect(await resolver.resolve("https://pinned.invalid/p") == .refused(.unresolvable))
    }
}
