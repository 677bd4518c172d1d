import Foundation
import NIOCore
import NIOPosix
import Testing
import ToolSupport

/// The tool's HTTP client against raw servers on loopback: an answer is read whole with its status,
/// a silent server ends in the timeout, an oversized answer and a plaintext server behind `https` are
/// errors, never hangs.
@Suite("The tool's HTTP client")
struct ToolHTTPClientTests {
    /// Answers each connection's first bytes with `reply` (nil: never answers), then closes.
    final class RawServer: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let reply: String?
        init(reply: String?) { self.reply = reply }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard let reply else { return }
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.writeAndFlush(NIOAny(ByteBuffer(string: reply))).whenComplete { _ in bound.value.close(promise: nil) }
        }

        static func start(reply: String?) async throws -> any Channel {
            try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(RawServer(reply: reply))
                    }
                }
                .bind(host: "127.0.0.1", port: 0).get()
        }
    }

    static func url(_ server: any Channel, scheme: String = "http") -> String {
        "\(scheme)://127.0.0.1:\(server.localAddress!.port!)/path?q=1"
    }

    @Test func anAnswerIsReadWholeWithItsStatus() async throws {
        let server = try await RawServer.start(reply: "HTTP/1.1 404 Not Found\r\nContent-Length: 5\r\n\r\nnope!")
        defer { server.close(promise: nil) }
        let response = try await ToolHTTPClient().send(.POST, Self.url(server), body: ByteBuffer(string: "{}"))
        #expect(response.status == 404)
        #expect(String(buffer: response.body) == "nope!")
    }

    @Test func whatCannotBeAnsweredFailsWithinItsTimeout() async throws {
        let silent = try await RawServer.start(reply: nil)
        defer { silent.close(promise: nil) }
        // Without its timeout the request would wait forever; any finite bound shows it ended (a loaded
        // machine stretches the second a lot, so the bound is wide).
        let client = try ToolHTTPClient()
        let started = ContinuousClock.now
        await #expect(throws: ToolHTTPClient.Failure.self) {
            try await client.send(.GET, Self.url(silent), timeout: .seconds(1))
        }
        #expect(ContinuousClock.now - started < .seconds(60))

        let large = try await RawServer.start(
            reply: "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + String(repeating: "x", count: 100))
        defer { large.close(promise: nil) }
        await #expect(throws: ToolHTTPClient.Failure.self) {
            try await ToolHTTPClient().send(.GET, Self.url(large), maximumAnswerBytes: 10)
        }

        let plaintext = try await RawServer.start(reply: "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        defer { plaintext.close(promise: nil) }
        await #expect(throws: (any Error).self) {
            try await ToolHTTPClient().send(.GET, Self.url(plaintext, scheme: "https"), timeout: .seconds(5))
        }
        await #expect(throws: (any Error).self) { try await ToolHTTPClient().send(.GET, "http://127.0.0.1:9/") }
        await #expect(throws: ToolHTTPClient.Failure.self) { try await ToolHTTPClient().send(.GET, "ftp://example.com/") }
    }
}
