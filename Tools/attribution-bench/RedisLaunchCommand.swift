import ArgumentParser
import Foundation
import PipelineLaunch

/// `attribution-bench redis`: one redis-server or a Redis Cluster for a benchmark or fault run, started
/// by the launcher the Swift test suites use, and driven over stdin while it runs. It prints one JSON
/// line once Redis is ready, then answers each JSON line it reads with one JSON line. End of input or
/// SIGTERM stops every node it started.
struct RedisLaunchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "redis",
        abstract: "Start Redis or a Redis Cluster for a run, and drive it over stdin (kill, fail over, reshard, cut).",
        discussion: """
            Once ready it prints {"url", "cluster", "ports", "addresses"} (one Redis: and "pid"). Then
            each line read is a request, {"command": NAME, ...}, answered by {"ok": true, ...} or
            {"ok": false, "error": TEXT}:
              one Redis: kill, restart (same port and files);
              a cluster: kill {port}, fail-over (answers killed, promoted), replace {port}, nodes,
              reshard {slots, source, target}, cut {port, others}, heal, wait-healthy.
            """)

    @Flag(help: "A Redis Cluster instead of one redis-server.")
    var cluster = false

    @Option(help: "Cluster nodes in all (half primaries, each with one replica).")
    var nodes = 6

    @Flag(help: "An append-only file synced every second (what compose runs); else nothing on disk.")
    var appendOnly = false

    @Flag(help: "Cluster: each node its own loopback address (127.0.0.21, ...), so nodes can be cut apart.")
    var apart = false

    @Flag(
        help: """
            TLS only (--port 0 --tls-port; a cluster's nodes between themselves too), demanding client \
            certificates: a CA and the server's and a client's certificates made in DIRECTORY/tls (openssl), \
            named in the ready line's "tls".
            """)
    var tls = false

    @Option(help: "One Redis: the address it binds.")
    var host = "127.0.0.1"

    @Option(help: "One Redis: its port (else a free one).")
    var port: Int?

    @Option(help: "Where the files go, kept afterwards (else a temporary directory, removed).")
    var directory: String?

    @Option(
        parsing: .unconditionalSingleValue, help: "One Redis: a word of the command that runs it (ip netns exec NAME), repeated.")
    var prefix: [String] = []

    @Option(parsing: .unconditionalSingleValue, help: "A word of every redis-server's command line (--aclfile), repeated.")
    var serverArgument: [String] = []

    @Option(help: "The user this launcher connects as, when ACLs are on.")
    var user: String?

    @Option(help: "A file holding that user's password.")
    var passwordFile: String?

    func validate() throws {
        guard !cluster || (nodes >= 6 && nodes % 2 == 0) else { throw ValidationError("--nodes must be even and at least 6") }
        guard (user == nil) == (passwordFile == nil) else { throw ValidationError("--user and --password-file go together") }
        guard cluster || !apart else { throw ValidationError("--apart needs --cluster") }
        guard !tls || directory != nil else { throw ValidationError("--tls needs --directory: the certificates go there") }
        guard !(apart && tls) else { throw ValidationError("--tls runs a cluster on 127.0.0.1: not with --apart") }
    }

    func run() async throws {
        let password = try passwordFile.map {
            guard let text = try? String(contentsOfFile: $0, encoding: .utf8) else {
                throw ValidationError("--password-file \($0) cannot be read")
            }
            return text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let launched: any LaunchedRedis
        if cluster {
            var options = RedisCluster.Options()
            options.nodes = nodes
            options.appendOnly = appendOnly
            options.apart = apart
            options.arguments = serverArgument
            options.username = user
            options.password = password
            options.directory = directory.map { URL(fileURLWithPath: $0, isDirectory: true) }
            if tls, let folder = options.directory?.appendingPathComponent("tls", isDirectory: true) {
                options.tls = try RedisServer.TLS.made(in: folder)
            }
            launched = try await RedisCluster.start(options)
        } else {
            let directory = self.directory.map { URL(fileURLWithPath: $0, isDirectory: true) }
            let certificates = tls ? directory?.appendingPathComponent("tls", isDirectory: true) : nil
            launched = try await RedisServer.start(
                appendOnly: appendOnly, arguments: serverArgument, username: user, password: password, host: host,
                port: port, directory: directory, prefix: prefix,
                tls: try certificates.map { try RedisServer.TLS.made(in: $0, host: host) })
        }
        let control = RedisControl(launched)
        let signals = control.stopOnTermination()
        control.write(launched.ready)
        for await line in StandardInputLines() {
            control.write(await control.answer(line))
        }
        launched.stop()
        withExtendedLifetime(signals) {}
    }
}
