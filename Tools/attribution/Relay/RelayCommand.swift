import ArgumentParser
import Foundation
import NIOCore
import NIOPosix

/// `attribution relay`: a TCP relay that adds latency, for the round-trip benchmark
/// (`scripts/bench_rtt.py`) and the network fault run. Python's asyncio relay spent a core's worth of
/// the benchmark machine on Redis's many small replies, which the services then lacked; this one runs
/// on one NIO event loop.
struct RelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay",
        abstract:
            "Relays TCP connections from --listen to --upstream, each chunk held half the added round trip each way (in order)."
    )

    @Option(help: "HOST:PORT to accept connections on.")
    var listen: String

    @Option(help: "HOST:PORT to relay them to.")
    var upstream: String

    @Option(name: .customLong("delay-ms"), help: "Milliseconds added to every round trip.")
    var delayMilliseconds: Double = 0

    @Option(
        name: .customLong("delay-file"),
        help:
            "A file holding the milliseconds to add (read ten times a second, so a run can change it; absent or empty: 0); overrides --delay-ms."
    )
    var delayFile: String?

    func validate() throws {
        for (name, value) in [("--listen", listen), ("--upstream", upstream)] where Self.address(value) == nil {
            throw ValidationError("\(name) must be HOST:PORT, got \(value)")
        }
        guard delayMilliseconds >= 0 else { throw ValidationError("--delay-ms must be at least 0") }
    }

    static func address(_ text: String) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (1...65_535).contains(port)
        else { return nil }
        return (String(text[..<colon]), port)
    }

    func run() async throws {
        let delay = RelayDelay()
        delay.set(roundTripMilliseconds: delayMilliseconds)
        let listen = Self.address(listen)!
        let upstream = Self.address(upstream)!
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let server = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelOption(.autoRead, value: false)
            .childChannelInitializer { inbound in
                ClientBootstrap(group: inbound.eventLoop)
                    .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                    .channelOption(.autoRead, value: false)
                    .connect(host: upstream.host, port: upstream.port)
                    .flatMapThrowing { outbound in
                        try inbound.pipeline.syncOperations.addHandler(DelayedForwarder(peer: outbound, delay: delay))
                        try outbound.pipeline.syncOperations.addHandler(DelayedForwarder(peer: inbound, delay: delay))
                        inbound.setOption(.autoRead, value: true).whenComplete { _ in }
                        outbound.setOption(.autoRead, value: true).whenComplete { _ in }
                    }
                    .flatMapError { error in inbound.close().flatMapThrowing { throw error } }
            }
            .bind(host: listen.host, port: listen.port).get()
        if let delayFile {
            while !Task.isCancelled {
                let text = (try? String(contentsOfFile: delayFile, encoding: .utf8))?.trimmingCharacters(
                    in: .whitespacesAndNewlines)
                delay.set(roundTripMilliseconds: text.flatMap(Double.init) ?? 0)
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        try await server.closeFuture.get()
    }
}
