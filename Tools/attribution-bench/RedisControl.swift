import Foundation
import PipelineLaunch
import Synchronization

/// What `attribution-bench redis` launched: one server or a cluster, answering the same requests.
protocol LaunchedRedis: Sendable {
    /// The line printed once it is ready.
    var ready: [String: any Sendable] { get }
    /// The answer to one request (its fields besides "ok"); thrown when it failed or is unknown.
    func answer(_ request: RedisControl.Request) async throws -> [String: any Sendable]
    func stop()
}

/// The request-and-answer loop of `attribution-bench redis`, one JSON object per line each way.
final class RedisControl: Sendable {
    /// One request line.
    struct Request: Decodable, Sendable {
        var command: String
        var port: Int?
        var others: [Int]?
        var slots: Int?
        var source: Int?
        var target: Int?
    }

    private let launched: any LaunchedRedis
    private let output = Mutex(())

    init(_ launched: any LaunchedRedis) {
        self.launched = launched
    }

    /// The answer to one line: what the request returned, or why it failed.
    func answer(_ line: String) async -> [String: any Sendable] {
        do {
            let request = try JSONDecoder().decode(Request.self, from: Data(line.utf8))
            return ["ok": true].merging(try await self.launched.answer(request)) { $1 }
        } catch is DecodingError {
            return ["ok": false, "error": "not a request: a JSON object {\"command\": NAME, ...} on one line"]
        } catch {
            return ["ok": false, "error": "\(error)"]
        }
    }

    /// One line of JSON on stdout, flushed: the reader waits for it.
    func write(_ object: [String: any Sendable]) {
        let data =
            (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
            ?? Data("{}".utf8)
        self.output.withLock { _ in
            FileHandle.standardOutput.write(data + Data("\n".utf8))
        }
    }

    /// SIGTERM or SIGINT stop what was launched and exit: a run's cleanup stops this process that way.
    /// The caller keeps the sources for as long as it runs.
    func stopOnTermination() -> [any DispatchSourceSignal] {
        [SIGTERM, SIGINT].map { signal in
            Foundation.signal(signal, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signal, queue: .global())
            source.setEventHandler { [launched] in
                launched.stop()
                exit(0)
            }
            source.resume()
            return source
        }
    }
}

extension RedisServer: LaunchedRedis {
    var ready: [String: any Sendable] {
        var ready: [String: any Sendable] = [
            "url": self.url, "cluster": false, "ports": [self.port], "addresses": [String(self.port): self.host],
            "pid": self.processIdentifier.map(Int.init) ?? 0,
        ]
        ready["tls"] = self.tls?.readyLine
        return ready
    }

    func answer(_ request: RedisControl.Request) async throws -> [String: any Sendable] {
        switch request.command {
        case "kill": self.kill()
        case "restart":
            try await self.restart()
            return ["pid": self.processIdentifier.map(Int.init) ?? 0]
        default: throw LaunchError("unknown request \(request.command) for one Redis (kill, restart)")
        }
        return [:]
    }
}

extension RedisCluster: LaunchedRedis {
    var ready: [String: any Sendable] {
        [
            "url": self.configuration.url, "cluster": true, "ports": self.ports,
            "addresses": Dictionary(uniqueKeysWithValues: self.addresses.map { (String($0.key), $0.value) }),
        ].merging(self.tls.map { ["tls": $0.readyLine] } ?? [:]) { $1 }
    }

    func answer(_ request: RedisControl.Request) async throws -> [String: any Sendable] {
        func required<T>(_ value: T?, _ name: String) throws -> T {
            guard let value else { throw LaunchError("\(request.command) needs \(name)") }
            return value
        }
        switch request.command {
        case "kill":
            self.kill(port: try required(request.port, "port"))
        case "fail-over":
            let (killed, promoted) = try await self.failOver()
            return ["killed": killed, "promoted": promoted]
        case "replace":
            try await self.replace(port: try required(request.port, "port"))
        case "nodes":
            let nodes: [[String: any Sendable]] = try await self.nodes().map { node in
                ["port": node.port, "role": node.role, "id": node.id, "primary": node.primary ?? NSNull(), "slots": node.slots]
            }
            return ["nodes": nodes]
        case "reshard":
            try await self.reshard(
                slots: try required(request.slots, "slots"), from: try required(request.source, "source"),
                to: try required(request.target, "target"))
        case "cut":
            try self.cut(try required(request.port, "port"), from: try required(request.others, "others"))
        case "heal":
            Self.heal()
        case "wait-healthy":
            try await self.waitUntilHealthy()
        default:
            throw LaunchError(
                "unknown request \(request.command) for a cluster (kill, fail-over, replace, nodes, reshard, cut, heal, wait-healthy)"
            )
        }
        return [:]
    }
}

/// Stdin's lines as they come, read on a thread of their own (a blocking read must not hold one of the
/// few cooperative threads); ends at end of input.
struct StandardInputLines: AsyncSequence {
    func makeAsyncIterator() -> AsyncStream<String>.Iterator {
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        Thread {
            while let line = readLine() {
                continuation.yield(line)
            }
            continuation.finish()
        }.start()
        return stream.makeAsyncIterator()
    }
}

extension RedisServer.TLS {
    /// What its clients present and trust, as the ready line names them: the files of the settings of the
    /// same names (REDIS_TLS_CA_FILE, ...).
    var readyLine: [String: String] {
        ["ca-file": self.ca, "cert-file": self.client?.certificate, "key-file": self.client?.key].compactMapValues { $0 }
    }
}
