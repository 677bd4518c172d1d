import Foundation
import PipelineCatalog
import ServiceRuntime
import Testing
import Yams

/// The repository's own deployment checks: no Docker engine runs here, so these read the files.
@Suite("compose.yaml, Dockerfile and the configuration reference agree with the code")
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

    static func compose(_ file: String = "compose.yaml") throws -> [String: Any] {
        try #require(try Yams.load(yaml: read(file)) as? [String: Any])
    }

    static func services(_ file: String = "compose.yaml") throws -> [String: [String: Any]] {
        try #require(try compose(file)["services"] as? [String: [String: Any]])
    }

    static let pipelineServices = ["ingest", "admin", "verifier", "attribution-winner", "scheduler", "dispatcher"]
    /// `redis` is the first node of the cluster profile's cluster.
    static let clusterNodes = (2...6).map { "redis-node-\($0)" }
    /// Services from third-party images, not built here.
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
            // Workers inherit HTTP_PORT 9090 from the shared block; ingest's /metrics is on its operations listener.
            let port = Int("\(environment["OPERATIONS_HTTP_PORT"] ?? environment["HTTP_PORT"] ?? "9090")") ?? 9090
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

    /// Every service on the project's image runs an executable Package.swift builds, or a script of
    /// ops/compose that the Dockerfile ships.
    @Test func everyComposeServiceRunsABuiltExecutable() throws {
        let executables = try Self.executables()
        let dockerfile = try Self.read("Dockerfile")
        #expect(dockerfile.contains("COPY ops/compose/*.sh /usr/local/libexec/attribution-pipeline/"))
        for file in ["compose.yaml", "compose.test.yaml"] {
            for (name, service) in try Self.services(file) where !Self.thirdParty.contains(name) {
                if let entrypoint = (service["entrypoint"] as? [String])?.first {
                    if entrypoint == "sh" { continue }
                    let script = entrypoint.replacingOccurrences(
                        of: "/usr/local/libexec/attribution-pipeline/", with: "ops/compose/")
                    #expect(script.hasPrefix("ops/compose/"), "\(file): \(name) runs \(entrypoint)")
                    _ = try Self.read(script)
                    continue
                }
                guard service["image"] != nil else { continue }  // an override of environment only
                let command = try #require(service["command"] as? [String], "\(file): \(name) has a command list")
                let executable = try #require(command.first)
                #expect(executables.contains(executable), "\(name) runs \(executable), which Package.swift must build")
            }
        }
    }

    /// In compose.yaml and in its scaled-time layer compose.test.yaml.
    @Test func everyEnvironmentVariableIsADocumentedKeyReadByThatService() throws {
        let documented = Dictionary(uniqueKeysWithValues: ConfigurationKey.all.map { ($0.name, $0) })
        for file in ["compose.yaml", "compose.test.yaml", "compose.tls.yaml"] {
            for (name, service) in try Self.services(file) where Self.pipelineServices.contains(name) {
                let environment = service["environment"] as? [String: Any] ?? [:]
                #expect(!environment.isEmpty, "\(file): \(name) sets its environment")
                for variable in environment.keys {
                    let key = documented[variable]
                    #expect(key != nil, "\(file): \(name) sets \(variable), which is not a documented configuration key")
                    if let key {
                        #expect(key.services.contains(name), "\(file): \(name) sets \(variable), which \(name) does not read")
                    }
                }
            }
        }
    }

    /// Every container runs as Kubernetes' restricted policy asks (the compose test checks the same on the
    /// engine): a read-only root filesystem, no capabilities, no privileges gained; init keeps the three
    /// it hands out secrets with, and Grafana (no offline image to test it with) a writable root.
    @Test(arguments: ["compose.yaml", "compose.test.yaml"])
    func everyContainerIsHardened(file: String) throws {
        for (name, service) in try Self.services(file) where service["image"] != nil {
            #expect(service["cap_drop"] as? [String] == ["ALL"], "\(file): \(name) drops every capability")
            #expect(
                service["security_opt"] as? [String] == ["no-new-privileges:true"], "\(file): \(name) gains no privileges")
            #expect(
                (service["read_only"] as? Bool == true) != (name == "grafana"), "\(file): \(name) has a read-only root")
            #expect(service["tmpfs"] == nil, "\(file): \(name) writes nowhere but its volumes")
            let added = Set(service["cap_add"] as? [String] ?? [])
            #expect(added == (name == "init" ? ["CHOWN", "DAC_OVERRIDE", "FOWNER"] : []), "\(file): \(name) adds \(added)")
        }
    }

    /// compose.tls.yaml: Redis TLS only (every node of the cluster profile, between the nodes too), and
    /// each service on rediss:// as its own user with the CA and the client certificate init gives it in
    /// its own secrets volume, checking the name on Redis's certificate, which the nodes share (the
    /// compose test runs the stack so on one Redis, and with `--cluster-tls` on the cluster profile).
    @Test func theTLSFormGivesEveryServiceItsOwnCertificate() throws {
        let services = try Self.services("compose.tls.yaml")
        let initScript = try Self.read("ops/compose/init.sh")
        for name in ["redis", "redis-cluster-init"] + Self.clusterNodes {
            let environment = try #require(services[name]?["environment"] as? [String: Any], "\(name)")
            #expect(environment["REDIS_TLS"] as? String == "true", "\(name)")
        }
        for name in ["redis"] + Self.clusterNodes {
            let command = (try Self.services()[name]?["command"] as? [String] ?? []).joined(separator: " ")
            #expect(command.contains("--port 0 --tls-port 6379") && command.contains("--tls-auth-clients yes"), "\(command)")
            #expect(command.contains("--tls-replication yes --tls-cluster $$cluster"), "\(name): \(command)")
        }
        #expect(initScript.contains("issue redis \"DNS:redis,"), "Redis's certificate carries the name redis")
        for name in Self.pipelineServices {
            let environment = try #require(services[name]?["environment"] as? [String: Any], "\(name)")
            #expect(environment["REDIS_URL"] as? String == "rediss://\(name)@redis:6379/0", "\(name)")
            #expect(environment["REDIS_TLS_SERVER_NAME"] as? String == "redis", "\(name)")
            for (key, file) in [
                ("REDIS_TLS_CA_FILE", "tls-ca.pem"), ("REDIS_TLS_CERT_FILE", "tls-client.pem"),
                ("REDIS_TLS_KEY_FILE", "tls-client-key.pem"),
            ] {
                #expect(environment[key] as? String == "/run/secrets/\(file)", "\(name): \(key)")
                #expect(initScript.contains("\"/secrets/$service/\(file)\""), "init gives \(file)")
            }
        }
    }

    /// Health checks ask /ready (up and reaching Redis), on the port each service listens on.
    @Test func healthChecksAskReady() throws {
        for (name, service) in try Self.services() where Self.pipelineServices.contains(name) {
            let test = (service["healthcheck"] as? [String: Any])?["test"] as? [String] ?? []
            let port = ["ingest": 8080, "admin": 8081][name] ?? 9090
            #expect(test.last == "http://127.0.0.1:\(port)/ready", "\(name): \(test)")
        }
    }

    @Test func workersAreScalableAndStopGracefully() throws {
        // ingest and admin publish their ports; the workers scale.
        for (name, service) in try Self.services()
        where Self.pipelineServices.contains(name) && !["ingest", "admin"].contains(name) {
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

    /// Redis runs with ACLs on, and each service connects as its own user, as its own system user, with its
    /// password from its own secrets volume, which `init` fills (ops/compose/init.sh) and no other service mounts.
    @Test func everyRedisRunsWithACLsAndEachServiceAsItsOwnUser() throws {
        let services = try Self.services()
        let initScript = try Self.read("ops/compose/init.sh")
        for name in ["redis"] + Self.clusterNodes {
            let command = (services[name]?["command"] as? [String] ?? []).joined(separator: " ")
            #expect(command.contains("--aclfile /run/secrets/users.acl"), "\(name): \(command)")
            #expect(command.contains("--include /run/secrets/replication.conf"), "\(name): \(command)")
            let volumes = services[name]?["volumes"] as? [String] ?? []
            #expect(volumes.contains("secrets-redis:/run/secrets:ro"), "\(name)")
            #expect(services[name]?["user"] as? String == "999:999", "\(name) runs as redis:7's redis user")
        }
        #expect(initScript.contains("give \"$redis\" \"$master/redis/users.acl\" /secrets/redis/users.acl"))
        for name in Self.pipelineServices {
            let service = try #require(services[name])
            let environment = try #require(service["environment"] as? [String: Any])
            #expect(environment["REDIS_URL"] as? String == "redis://\(name)@redis:6379/0", "\(name)")
            #expect(environment["REDIS_PASSWORD_FILE"] as? String == "/run/secrets/redis-password", "\(name)")
            #expect(service["user"] as? String == name, "\(name) runs as its own system user")
            #expect(RedisRights.services.contains(name), "\(name) has rights in RedisRights")
            #expect(initScript.contains("for service in ingest admin verifier attribution-winner scheduler dispatcher; do"))
        }
        // Each container mounts its own secrets only (init, which makes them, mounts them all).
        for file in ["compose.yaml", "compose.test.yaml"] {
            for (name, service) in try Self.services(file) where name != "init" {
                let own =
                    Self.pipelineServices.contains(name)
                    ? name : (["redis"] + Self.clusterNodes).contains(name) ? "redis" : "operator"
                for volume in service["volumes"] as? [String] ?? [] where volume.hasPrefix("secrets") {
                    #expect(volume == "secrets-\(own):/run/secrets:ro", "\(file): \(name) mounts \(volume)")
                }
            }
        }
        #expect(
            try Self.read("Dockerfile").contains(
                "for user in pipeline ingest verifier attribution-winner scheduler dispatcher receiver pipeline-operator admin"))
    }

    /// Profile `cluster`: `redis` and five more nodes, cluster-enabled with REDIS_CLUSTER, a job that makes
    /// them 3 primaries with a replica each, and the services switched to it by REDIS_CLUSTER alone, started
    /// once `redis` is healthy, which on a cluster means formed.
    @Test func theClusterProfileRunsSixNodesAndCreatesTheCluster() throws {
        let services = try Self.services()
        for name in ["redis"] + Self.clusterNodes {
            let node = try #require(services[name], "compose.yaml runs \(name)")
            #expect(node["profiles"] as? [String] == (name == "redis" ? nil : ["cluster"]), "\(name) only in the cluster profile")
            let command = (node["command"] as? [String] ?? []).joined(separator: " ")
            #expect(
                command.contains("--cluster-enabled $$cluster") && command.contains("--appendonly yes"), "\(name): \(command)")
            #expect((node["environment"] as? [String: Any])?["REDIS_CLUSTER"] as? String == "${REDIS_CLUSTER:-false}")
            #expect(node["healthcheck"] != nil)
        }
        let redisCheck = ((services["redis"]?["healthcheck"] as? [String: Any])?["test"] as? [String] ?? []).joined()
        #expect(redisCheck.contains("cluster_state:ok"), "redis is healthy on a cluster once it is formed")
        let initJob = try #require(services["redis-cluster-init"])
        let script = (initJob["command"] as? [String] ?? []).joined(separator: " ")
        #expect(script.contains("--cluster create") && script.contains("--cluster-replicas 1"), "\(script)")
        #expect(Set((initJob["depends_on"] as? [String: Any] ?? [:]).keys) == Set(["redis"] + Self.clusterNodes))
        for name in Self.pipelineServices {
            let environment = try #require(services[name]?["environment"] as? [String: Any])
            #expect(environment["REDIS_CLUSTER"] as? String == "${REDIS_CLUSTER:-false}", "\(name)")
            let redis = (services[name]?["depends_on"] as? [String: Any])?["redis"] as? [String: Any]
            #expect(redis?["condition"] as? String == "service_healthy", "\(name) waits for a healthy redis")
        }
    }

    /// The image is built on base images named by variables whose defaults are the public images, and the
    /// build context holds only what the Dockerfile copies.
    @Test func imagesAreVariablesDefaultingToThePublicOnes() throws {
        let dockerfile = try Self.read("Dockerfile")
        #expect(
            dockerfile.contains("ARG SWIFT_IMAGE=swift:6.2-bookworm")
                && dockerfile.contains("ARG BASE_IMAGE=debian:bookworm-slim"))
        #expect(dockerfile.contains("FROM ${SWIFT_IMAGE} AS build") && dockerfile.contains("FROM ${BASE_IMAGE} AS runtime\n"))
        #expect(dockerfile.contains("org.opencontainers.image.version"))
        let services = try Self.services()
        #expect(services["redis"]?["image"] as? String == "${REDIS_IMAGE:-redis:7}")
        #expect(services["prometheus"]?["image"] as? String == "${PROMETHEUS_IMAGE:-prom/prometheus:v2.53.0}")
        let ignore = try Self.read(".dockerignore").split(separator: "\n").map(String.init)
        #expect(ignore.first { !$0.hasPrefix("#") } == "*", ".dockerignore starts from nothing")
        #expect(!ignore.contains("!run") && !ignore.contains("!.git") && !ignore.contains("!.build"))
    }

    /// The runtime stage comes first, so that `docker build --target runtime` builds nothing else; the last
    /// stage adds to it only what the build stage made, in the form `scripts/compose-lib.sh`'s
    /// `build_project_image_from` rewrites to copy executables built outside Docker.
    @Test func theImageIsTheRuntimeStageAndWhatTheBuildStageMade() throws {
        let dockerfile = try Self.read("Dockerfile")
        #expect(dockerfile.components(separatedBy: "\nFROM ").dropFirst().first?.hasPrefix("${BASE_IMAGE} AS runtime") == true)
        let last = try #require(dockerfile.components(separatedBy: "\nFROM ").last)
        let copies = last.split(separator: "\n").filter { $0.hasPrefix("COPY") }
        #expect(last.hasPrefix("runtime\n"), "the image is FROM runtime")
        #expect(
            copies == ["COPY --from=build /out/lib/ /usr/local/lib/swift/", "COPY --from=build /out/bin/ /usr/local/bin/"],
            "\(copies)")
        let lib = try Self.read("scripts/compose-lib.sh")
        #expect(lib.contains("s|^FROM runtime$|FROM attribution-pipeline:runtime|; s|--from=build /out/|out/|"))
        #expect(try Self.read("scripts/test.sh").contains("compose-test.sh --binaries"))
    }

    /// The image's OCI labels carry the executables' version and the licence.
    @Test func theImageCarriesTheVersion() throws {
        let dockerfile = try Self.read("Dockerfile")
        #expect(dockerfile.contains("\nARG VERSION=\(PipelineVersion.current)\n"))
        #expect(dockerfile.contains(#"org.opencontainers.image.version="${VERSION}""#))
        #expect(dockerfile.contains(#"org.opencontainers.image.licenses="Apache-2.0""#))
        #expect(dockerfile.contains("ENV PIPELINE_REVISION=${REVISION}"))
    }

    /// The Dockerfile's stages by their `FROM` line (image and name), each with its body.
    static func dockerStages(_ dockerfile: String) -> [String: String] {
        var stages: [String: String] = [:]
        for stage in dockerfile.components(separatedBy: "\nFROM ").dropFirst() {
            let header = String(stage.prefix { $0 != "\n" })
            stages[header] = String(stage.dropFirst(header.count))
        }
        return stages
    }

    /// Every executable but the benchmark's own tool, which runs beside a benchmark's private pipeline.
    @Test func dockerfileShipsEveryExecutable() throws {
        let dockerfile = try Self.read("Dockerfile")
        #expect(!dockerfile.contains("attribution-bench"))
        for executable in try Self.executables().subtracting(["attribution-bench"]) {
            #expect(dockerfile.contains(" \(executable)"), "Dockerfile copies \(executable)")
        }
    }

    #if os(Linux)
        /// The executables are linked with jemalloc (`Allocator`): its development package where they are
        /// built, its runtime library where they run, and `malloc` in this process (which links
        /// ServiceRuntime as they do) is jemalloc's: what this thread allocated grows by the block's size.
        @Test func jemallocIsTheAllocatorAndTheImageShipsIt() throws {
            let dockerfile = try Self.read("Dockerfile")
            let stages = Self.dockerStages(dockerfile)
            #expect(stages["${SWIFT_IMAGE} AS build"]?.contains("libjemalloc-dev") == true)
            #expect(stages["${BASE_IMAGE} AS runtime"]?.contains("libjemalloc2") == true)
            #expect(try Self.read("scripts/lib.sh").contains("libjemalloc-dev"))
            #expect(Allocator.version != nil, "jemalloc answers mallctl")
            let before = try #require(Allocator.threadAllocatedBytes)
            let block = malloc(1 << 20)
            let after = try #require(Allocator.threadAllocatedBytes)
            free(block)
            #expect(after - before >= 1 << 20, "malloc went to jemalloc: \(before) → \(after)")
        }
    #endif

    @Test func configurationReferenceTableMatchesTheCatalog() throws {
        let reference = try Self.read("docs/reference/configuration.md")
        #expect(
            reference.contains(ConfigurationKey.markdownTable()),
            "docs/reference/configuration.md's table is stale: regenerate it with `swift run ingest --configuration-table`")
    }
}
