import ArgumentParser
import AttributionModel
import CryptoPrimitives
import Foundation
import PipelineCatalog
import ServiceRuntime

/// `attribution redis-acl`: the ACL file compose starts Redis with, one user per service with only its
/// rights (`RedisRights`), and each user's password in a file of its own.
struct RedisACLCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "redis-acl",
        abstract: "Write a Redis ACL file (one user per service, with only its rights) and the users' passwords.",
        discussion: """
            Writes <out>/users.acl (0644: it holds only SHA-256 hashes of the passwords) and \
            <out>/<user>.password (0600) for each service and for `operator` (every right: for people and \
            redis-cli) and `replication` (what a replica needs of its primary; <out>/replication.conf, 0600, \
            holds its masteruser and masterauth for `redis-server --include`). The `default` user is off, so \
            a connection without credentials can do nothing (its rights are every right only because Redis \
            before 7.2 reloads an AOF's transactions as that user); `healthcheck` may only PING, with any password. \
            Start Redis with `--aclfile <out>/users.acl` and give each service \
            REDIS_URL=redis://<service>@host:port/0 and REDIS_PASSWORD_FILE=<out>/<service>.password. \
            Passwords already in <out> are kept unless --force.
            """
    )

    @Option(help: "Directory for the ACL file and the password files (created if missing).")
    var out: String

    @Flag(help: "New passwords for every user, replacing the ones in --out.")
    var force = false

    static let operatorUser = "operator"
    static let replicationUser = "replication"

    func run() throws {
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        var lines = [
            // Off and without a password: no connection can be the default user. Its rights are every
            // right because Redis before 7.2 (Debian 12 ships 7.0.15) replays an AOF's MULTI/EXEC as the
            // default user: with -@all each reloaded transaction failed with NOPERM and a restarted
            // Redis lost every transaction it had acknowledged.
            "user default off resetpass ~* &* +@all",
            "user healthcheck on nopass resetchannels -@all +ping",
        ]
        let users = [Self.operatorUser, Self.replicationUser] + RedisRights.services
        for user in users {
            let password = try password(of: user)
            let hash = Hex.encode(SHA256.hash(data: Data(password.utf8)))
            switch user {
            case Self.operatorUser: lines.append("user \(user) on #\(hash) ~* &* +@all")
            case Self.replicationUser:
                lines.append("user \(user) on #\(hash) resetchannels -@all +psync +replconf +ping")
                try KeyFiles.writeFile(
                    path(of: "replication.conf"), contents: "masteruser \(user)\nmasterauth \(password)\n", mode: 0o600,
                    overwrite: true)
            default: lines.append(RedisRights.aclLine(user, passwordSHA256: hash))
            }
        }
        let file = path(of: "users.acl")
        try KeyFiles.writeFile(file, contents: lines.joined(separator: "\n") + "\n", mode: 0o644, overwrite: true)
        printError("wrote \(file), replication.conf and the password files of \(users.joined(separator: ", "))")
    }

    private func path(of file: String) -> String {
        URL(fileURLWithPath: out).appendingPathComponent(file).path
    }

    /// The user's password: the one in its file, or a new random one written there (0600).
    private func password(of user: String) throws -> String {
        let path = path(of: "\(user).password")
        if !force, let existing = try? String(contentsOfFile: path, encoding: .utf8) {
            let password = existing.trimmingCharacters(in: .newlines)
            if !password.isEmpty { return password }
        }
        var generator = KernelRandom()
        let password = Hex.encode((0..<24).map { _ in UInt8.random(in: 0...255, using: &generator) })
        try KeyFiles.writeFile(path, contents: password + "\n", mode: 0o600, overwrite: true)
        return password
    }
}
