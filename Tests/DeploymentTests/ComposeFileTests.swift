import Foundation
import ServiceRuntime
import Testing
import Yams

/// The repository's own deployment checks: no Docker engine runs here, so these read the files.
@Suite("compose.yaml, Dockerfile and README agree with the code")
struct ComposeFileTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func read(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// Executable products declared in Package.swift.
    static func executables() throws -> Set<String> {
        let manifest = try read("Package.swift")
        let regex = /\.executable\(name: "([^"]+)"/
        return Set(manifest.matches(of: regex).map { String($0.output.1) })
    }

    static func compose() throws -> [String: Any] {
        try #require(try Yams.load(yaml: read("compose.yaml")) as? [String: Any])
    }

    static func services() throws -> [String: [String: Any]] {
        try #require(try compose()["services"] as? [String: [String: Any]])
    }

    static let pipelineServices = ["ingest", "verifier", "attribution-winner", "scheduler", "dispatcher"]
    /// Services from public images, not built here.
    static let clusterNodes = (1...6).map { "redis-node-\($0)" }
    static let thirdParty: Set<String> = Set(["redis", "prometheus", "grafana", "redis-cluster-init"] + clusterNodes)

    /// Prometheus scrapes every pipeline service (all replicas, through DNS discovery) at the port it
    /// listens on, and scrapes nothing else.
    @Test func prometheusScrapesEveryServiceAtItsPort() throws {
        let config = try #require(try Yams.load(yaml: Self.read("ops/prometheus.yml")) as? [String: Any])
        let jobs = try #require(config["scrape_configs"] as? [[String: Any]])
        var targets: [String: Int] = [:]
        for job in jobs {
            for discovery in job["dns_sd_configs"] as? [[String: Any]] ?? [] {
                for name in discovery["names"] as? [String] ?? [] { targets[name] = discovery["port"] as? Int }
            }
        }
        #expect(Set(targets.keys) == Set(Self.pipelineServices))
        let services = try Self.services()
        for name in Self.pipelineServices {
            let environment = services[name]?["environment"] as? [String: Any] ?? [:]
            // Workers inherit HTTP_PORT 9090 from the shared block; ingest's /metrics is on its admin listener.
            let port = Int("\(environment["ADMIN_HTTP_PORT"] ?? environment["HTTP_PORT"] ?? "9090")") ?? 9090
            #expect(targets[name] == port, "\(name) is scraped at \(port)")
        }
        let prometheus = try #require(services["prometheus"])
        #expect((prometheus["volumes"] as? [String] ?? []).contains { $0.hasPrefix("./ops/prometheus.yml:") })
    }

    /// The Grafana dashboard is provisioned from the repository, and every metric it queries is one the
    /// code exports.
    @Test func grafanaDashboardIsProvisionedAndQueriesExportedMetrics() throws {
        let grafana = try #require(try Self.services()["grafana"])
        let volumes = grafana["volumes"] as? [String] ?? []
        #expect(volumes.contains { $0.hasPrefix("./ops/grafana/provisioning:") })
        #expect(volumes.contains { $0.hasPrefix("./ops/grafana/dashboards:") })
        _ = try Self.read("ops/grafana/provisioning/datasources/prometheus.yml")
        _ = try Self.read("ops/grafana/provisioning/dashboards/pipeline.yml")
        let dashboard = try Self.read("ops/grafana/dashboards/pipeline.json")
        let metrics = Set(dashboard.matches(of: /\(([a-z_]+)(\{|\[)/).map { String($0.output.1) })
            .subtracting(["rate", "sum", "max", "histogram_quantile"])
        #expect(!metrics.isEmpty)
        let sources = try Self.swiftSources()
        for metric in metrics {
            let base = metric.replacingOccurrences(of: "_bucket", with: "")
            #expect(sources.contains("\"\(base)\""), "the dashboard queries \(metric), which no code exports")
        }
    }

    /// Prometheus loads the alerting rules from the repository, Redis's memory is among them, and every
    /// metric a rule reads is one the code exports.
    @Test func alertRulesAreLoadedAndReadExportedMetrics() throws {
        let prometheus = try #require(try Self.services()["prometheus"])
        #expect((prometheus["volumes"] as? [String] ?? []).contains("./ops/alerts.yml:/etc/prometheus/alerts.yml:ro"))
        let config = try #require(try Yams.load(yaml: Self.read("ops/prometheus.yml")) as? [String: Any])
        #expect(config["rule_files"] as? [String] == ["/etc/prometheus/alerts.yml"])
        let rules = try #require(try Yams.load(yaml: Self.read("ops/alerts.yml")) as? [String: Any])
        let groups = try #require(rules["groups"] as? [[String: Any]])
        let expressions = groups.flatMap { $0["rules"] as? [[String: Any]] ?? [] }.compactMap { $0["expr"] as? String }
        #expect(expressions.contains { $0.contains("redis_used_memory_bytes") && $0.contains("redis_maxmemory_bytes") })
        let sources = try Self.swiftSources()
        for expression in expressions {
            for metric in expression.matches(of: /\b(redis|pipeline|dispatcher|verifier)_[a-z_]+/).map({ String($0.output.0) }) {
                #expect(sources.contains("\"\(metric)\""), "an alert reads \(metric), which no code exports")
            }
        }
    }

    static func swiftSources() throws -> String {
        var sources = ""
        for directory in ["Shared", "Services"] {
            let enumerator = FileManager.default.enumerator(
                at: Self.root.appendingPathComponent(directory), includingPropertiesForKeys: nil)
            while let url = enumerator?.nextObject() as? URL {
                guard url.pathExtension == "swift" else { continue }
                sources += (try? String(contentsOf: url, encoding: .utf8)) ?? ""
            }
        }
        return sources
    }

    @Test func everyPipelineServiceIsInComposeAndBuilt() throws {
        let executables = try Self.executables()
        let services = try Self.services()
        for name in Self.pipelineServices {
            #expect(executables.contains(name), "Package.swift builds \(name)")
            #expect(services[name] != nil, "compose.yaml runs \(name)")
        }
    }

    @Test func everyComposeServiceRunsABuiltExecutable() throws {
        let executables = try Self.executables()
        for (name, service) in try Self.services() where !Self.thirdParty.contains(name) {
            let command = try #require(service["command"] as? [String], "\(name) has a command list")
            let executable = try #require(command.first)
            #expect(executables.contains(executable), "\(name) runs \(executable), which Package.swift must build")
        }
    }

    @Test func everyEnvironmentVariableIsADocumentedKeyReadByThatService() throws {
        let documented = Dictionary(uniqueKeysWithValues: ConfigurationKey.all.map { ($0.name, $0) })
        for (name, service) in try Self.services() where Self.pipelineServices.contains(name) {
            let environment = service["environment"] as? [String: Any] ?? [:]
            #expect(!environment.isEmpty, "\(name) sets its environment")
            for variable in environment.keys {
                let key = documented[variable]
                #expect(key != nil, "\(name) sets \(variable), which is not a documented configuration key")
                if let key {
                    #expect(key.services.contains(name), "\(name) sets \(variable), which \(name) does not read")
                }
            }
        }
    }

    @Test func workersAreScalableAndStopGracefully() throws {
        for (name, service) in try Self.services() where Self.pipelineServices.contains(name) && name != "ingest" {
            // A fixed container name or host port would make `--scale` fail.
            #expect(service["container_name"] == nil, "\(name) must not fix its container name")
            #expect(service["ports"] == nil, "\(name) must not publish a host port")
            #expect(service["stop_grace_period"] != nil, "\(name) has a stop grace period")
            #expect(service["healthcheck"] != nil, "\(name) has a health check")
        }
        let redis = try #require(try Self.services()["redis"])
        let command = (redis["command"] as? [String] ?? []).joined(separator: " ")
        #expect(command.contains("--appendonly yes"), "Redis runs with AOF")
        #expect(redis["healthcheck"] != nil, "Redis has a health check")
        #expect(command.contains("--maxmemory-policy noeviction"), "a full Redis refuses writes, never evicts: \(command)")
    }

    /// Redis runs with ACLs on, and each service connects as its own user, its password a secret from
    /// `attribution redis-acl --out run/redis`.
    @Test func everyRedisRunsWithACLsAndEachServiceAsItsOwnUser() throws {
        let compose = try Self.compose()
        let services = try #require(compose["services"] as? [String: [String: Any]])
        let secrets = try #require(compose["secrets"] as? [String: [String: Any]])
        for name in ["redis"] + Self.clusterNodes {
            let command = (services[name]?["command"] as? [String] ?? []).joined(separator: " ")
            #expect(command.contains("--aclfile /run/secrets/redis_acl"), "\(name): \(command)")
            #expect(
                services[name]?["secrets"] as? [String] ?? [] == ["redis_acl"] + (name == "redis" ? [] : ["redis_replication"]))
        }
        #expect(secrets["redis_acl"]?["file"] as? String == "./run/redis/users.acl")
        for name in Self.pipelineServices {
            let environment = try #require(services[name]?["environment"] as? [String: Any])
            let secret = "redis_" + name.replacingOccurrences(of: "-", with: "_")
            #expect(environment["REDIS_URL"] as? String == "redis://\(name)@${REDIS_HOST:-redis}:6379/0", "\(name)")
            #expect(environment["REDIS_PASSWORD_FILE"] as? String == "/run/secrets/\(secret)", "\(name)")
            #expect((services[name]?["secrets"] as? [String] ?? []).contains(secret), "\(name) mounts \(secret)")
            #expect(secrets[secret]?["file"] as? String == "./run/redis/\(name).password", "\(secret)")
            #expect(RedisRights.services.contains(name), "\(name) has rights in RedisRights")
        }
    }

    /// Profile `cluster`: six cluster-enabled nodes, a job that makes them 3 primaries with a replica
    /// each, and the services switched to it by REDIS_HOST and REDIS_CLUSTER alone.
    @Test func theClusterProfileRunsSixNodesAndCreatesTheCluster() throws {
        let services = try Self.services()
        for name in Self.clusterNodes {
            let node = try #require(services[name], "compose.yaml runs \(name)")
            #expect(node["profiles"] as? [String] == ["cluster"], "\(name) only in the cluster profile")
            let command = (node["command"] as? [String] ?? []).joined(separator: " ")
            #expect(command.contains("--cluster-enabled yes") && command.contains("--appendonly yes"), "\(name): \(command)")
            #expect(node["healthcheck"] != nil)
        }
        let initJob = try #require(services["redis-cluster-init"])
        let script = (initJob["command"] as? [String] ?? []).joined(separator: " ")
        #expect(script.contains("--cluster create") && script.contains("--cluster-replicas 1"), "\(script)")
        #expect(Set((initJob["depends_on"] as? [String: Any] ?? [:]).keys) == Set(Self.clusterNodes))
        for name in Self.pipelineServices {
            let environment = try #require(services[name]?["environment"] as? [String: Any])
            #expect((environment["REDIS_URL"] as? String)?.contains("@${REDIS_HOST:-redis}:6379/0") == true, "\(name)")
            #expect(environment["REDIS_CLUSTER"] as? String == "${REDIS_CLUSTER:-false}", "\(name)")
        }
    }

    @Test func dockerfileShipsEveryExecutable() throws {
        let dockerfile = try Self.read("Dockerfile")
        for executable in try Self.executables() {
            #expect(dockerfile.contains(" \(executable)"), "Dockerfile copies \(executable)")
        }
    }

    #if os(Linux)
        /// The executables are linked with jemalloc (`Allocator`): its development package where they are
        /// built, its runtime library where they run, and `malloc` in this process (which links
        /// ServiceRuntime as they do) is jemalloc's: what this thread allocated grows by the block's size.
        @Test func jemallocIsTheAllocatorAndTheImageShipsIt() throws {
            let dockerfile = try Self.read("Dockerfile")
            let stages = dockerfile.components(separatedBy: "\nFROM ").dropFirst()  // the build stage, the image's
            #expect(stages.count == 2 && stages.first!.contains("libjemalloc-dev") && stages.last!.contains("libjemalloc2"))
            #expect(try Self.read("scripts/lib.sh").contains("libjemalloc-dev"))
            #expect(Allocator.version != nil, "jemalloc answers mallctl")
            let before = try #require(Allocator.threadAllocatedBytes)
            let block = malloc(1 << 20)
            let after = try #require(Allocator.threadAllocatedBytes)
            free(block)
            #expect(after - before >= 1 << 20, "malloc went to jemalloc: \(before) → \(after)")
        }
    #endif

    @Test func readmeConfigurationTableMatchesTheCatalog() throws {
        let readme = try Self.read("README.md")
        #expect(
            readme.contains(ConfigurationKey.markdownTable()),
            "README's configuration table is stale: regenerate it with `swift run ingest --configuration-table`")
    }
}
