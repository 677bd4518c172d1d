import Foundation

/// Network partitions between nodes run `apart`: iptables rules in a chain of the launcher's own.
extension RedisCluster {
    private static let chain = "AP-CLUSTER"

    /// Drops everything between node `port` and each of `others`, both ways; clients, which reach every
    /// node on 127.0.0.1, still reach all. Needs `Options.apart` and root (iptables).
    public func cut(_ port: Int, from others: [Int]) throws {
        guard self.options.apart else { throw LaunchError("cut needs a cluster started apart (each node its own address)") }
        if (try? Self.iptables(["-n", "-L", Self.chain])) == nil {
            try Self.iptables(["-N", Self.chain])
            try Self.iptables(["-I", "INPUT", "-j", Self.chain])
        }
        for other in others {
            for (source, target) in [(port, other), (other, port)] {
                try Self.iptables(["-A", Self.chain, "-s", self.addresses[source]!, "-d", self.addresses[target]!, "-j", "DROP"])
            }
        }
    }

    /// Removes every cut, and the chain: also what an interrupted run left.
    public static func heal() {
        _ = try? Self.iptables(["-D", "INPUT", "-j", Self.chain])
        _ = try? Self.iptables(["-F", Self.chain])
        _ = try? Self.iptables(["-X", Self.chain])
    }

    /// `iptables ARGS`, thrown on a non-zero exit.
    private static func iptables(_ arguments: [String]) throws {
        let process = Process()
        guard let executable = findExecutable("iptables") else { throw LaunchError("iptables is not on PATH") }
        process.executableURL = executable
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw LaunchError("iptables \(arguments.joined(separator: " ")) exited with \(process.terminationStatus)")
        }
    }
}
