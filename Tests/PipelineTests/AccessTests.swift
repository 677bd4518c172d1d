import AttributionCrypto
import AttributionModel
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceRuntime
import TestSupport
import Testing

extension PipelineSuites {
    /// Who can reach what, against a real ingest and admin: the admin API only on admin, `/metrics` on
    /// admin and on ingest's operations listener, never on the public port; ad networks' read-only
    /// credentials; deleting networks and apps.
    @Suite("Access: listeners, network credentials, deletion")
    struct AccessTests {
        let http = HTTPTestClient()
        static let network = "access.adattributionkit"
        static let other = "other.adattributionkit"
        static let publisher = 5_838_111
        static let app = 7_345_202

        func start() async throws -> (RedisServer, PipelineProcesses) {
            let redis = try await RedisServer.start()
            let ingest = try PipelineProcesses(redis: redis, timeScale: 1, only: ["ingest"])
            try #require(try await http.waitUntilUp("\(ingest.ingestURL)/health"), "ingest started\n\(ingest.logs())")
            return (redis, ingest)
        }

        func register(_ ingest: PipelineProcesses, network: String) async throws {
            let reply = try await http.send(
                "PUT", "\(ingest.adminURL)/v1/admin/ad-networks/\(network)",
                json: [
                    "public-key": SigningKey.generate().publicKey.pemRepresentation,
                    "postback-url": "https://postbacks.example/\(network)",
                ], token: ingest.adminToken)
            try #require(reply.status == 200, "\(reply.json)")
        }

        /// The public port answers 404 to every admin route and to `/metrics`, whatever the token; the
        /// admin port serves them. The public `/ready` never carries Redis's error text.
        @Test func theAdminAPIIsOnlyOnTheAdminListener() async throws {
            let (redis, ingest) = try await start()
            defer {
                ingest.stop()
                redis.stop()
            }
            for path in ["/v1/admin/dead-letters", "/v1/admin/ad-networks/\(Self.network)", "/metrics"] {
                let front = try await http.send("GET", ingest.ingestURL + path, token: ingest.adminToken)
                #expect(front.status == 404, "public \(path): \(front.status)")
            }
            let put = try await http.send(
                "PUT", "\(ingest.ingestURL)/v1/admin/advertised-apps/\(Self.app)", json: [:], token: ingest.adminToken)
            #expect(put.status == 404, "nothing registers through the public port")
            #expect(
                try await http.send("GET", "\(ingest.adminURL)/v1/admin/dead-letters", token: ingest.adminToken).status == 200)
            #expect(try await http.send("GET", "\(ingest.adminURL)/v1/admin/dead-letters").status == 401)
            for url in [ingest.adminURL, ingest.operationsURL] {
                let metrics = try await http.send("GET", "\(url)/metrics")
                let text = String(decoding: metrics.body, as: UTF8.self)
                #expect(metrics.status == 200 && text.contains("# TYPE"))
                #expect(text.contains(#"build_info{version="\#(PipelineVersion.current)",revision="unknown"} 1"#), "\(text)")
            }
            // ingest's operations listener serves no admin route either.
            #expect(
                try await http.send("GET", "\(ingest.operationsURL)/v1/admin/dead-letters", token: ingest.adminToken).status
                    == 404)
            #expect(try await http.send("GET", "\(ingest.ingestURL)/.well-known/jwks.json").status == 200)
            // …and is timed per route on ingest's /metrics (a histogram from 0.5 ms).
            let timed = String(decoding: try await http.send("GET", "\(ingest.operationsURL)/metrics").body, as: UTF8.self)
            #expect(
                timed.split(separator: "\n").contains {
                    $0.hasPrefix("ingest_request_duration_seconds_bucket{") && $0.contains(#"route="/.well-known/jwks.json""#)
                        && $0.contains(#"status="2xx""#) && $0.contains(#"le="0.0005""#)
                }, "\(timed)")
            // Load balancers may check liveness with HEAD, on either listener.
            #expect(try await http.send("HEAD", "\(ingest.ingestURL)/health").status == 200)
            #expect(try await http.send("HEAD", "\(ingest.adminURL)/health").status == 200)
            #expect(try await http.send("GET", "\(ingest.adminURL)/.well-known/jwks.json").status == 404)

            redis.stop()
            let front = try await http.send("GET", "\(ingest.ingestURL)/ready")
            #expect(front.status == 503 && front.json["reason"] as? String == "redis-unreachable")
            #expect(front.json["detail"] as? String == "Redis does not answer", "no addresses or error text: \(front.json)")
            // admin's and ingest's operations listener's /ready carry Redis's error text.
            for url in [ingest.adminURL, ingest.operationsURL] {
                let detailed = try await http.send("GET", "\(url)/ready")
                let detail = detailed.json["detail"] as? String ?? ""
                #expect(
                    detailed.status == 503 && detail.contains("redis") && detail != "Redis does not answer", "\(detailed.json)")
            }
        }

        /// A network's credential reads its own registration and refusals on the public port, and nothing
        /// of another network's; the admin token is no such credential; a revoked one stops working.
        @Test func aNetworkCredentialReadsOnlyItsOwnNetwork() async throws {
            let (redis, ingest) = try await start()
            defer {
                ingest.stop()
                redis.stop()
            }
            try await register(ingest, network: Self.network)
            try await register(ingest, network: Self.other)
            let admin = "\(ingest.adminURL)/v1/admin/ad-networks"
            func issue(_ network: String) async throws -> (credential: String, id: String) {
                let reply = try await http.send("POST", "\(admin)/\(network)/credentials", token: ingest.adminToken)
                try #require(reply.status == 201, "\(reply.json)")
                return (
                    try #require(reply.json["credential"] as? String),
                    try #require(reply.json["credential-identifier"] as? String)
                )
            }
            let mine = try await issue(Self.network)
            let second = try await issue(Self.network)
            let theirs = try await issue(Self.other)
            let unknown = try await http.send("POST", "\(admin)/never.registered/credentials", token: ingest.adminToken)
            #expect(unknown.status == 404 && unknown.json["reason"] as? String == "unknown-ad-network")

            let own = "\(ingest.ingestURL)/v1/ad-networks/\(Self.network)"
            let registration = try await http.send("GET", own, token: mine.credential)
            #expect(registration.status == 200 && registration.json["ad-network-identifier"] as? String == Self.network)
            let refusals = try await http.send("GET", "\(own)/rejections", token: mine.credential)
            #expect(
                refusals.status == 200 && refusals.json["rejections"] is [Any] && refusals.json["unsigned-refusals"] as? Int == 0)
            let crossed = try await http.send("GET", own, token: theirs.credential)
            #expect(crossed.status == 403 && crossed.json["reason"] as? String == "credential-mismatch")
            for token in [nil, ingest.adminToken, "nc_" + String(repeating: "0", count: 64)] {
                let refused = try await http.send("GET", "\(own)/rejections", token: token)
                #expect(refused.status == 401 && refused.json["reason"] as? String == "unauthorized", "token \(token ?? "none")")
            }
            // Read-only: it registers nothing, on either port.
            let write = try await http.send(
                "PUT", "\(ingest.adminURL)/v1/admin/ad-networks/\(Self.network)", json: [:], token: mine.credential)
            #expect(write.status == 401)

            let listed = try await http.send("GET", "\(admin)/\(Self.network)/credentials", token: ingest.adminToken)
            let ids = (listed.json["credentials"] as? [[String: Any]] ?? []).compactMap { $0["credential-identifier"] as? String }
            #expect(Set(ids) == [mine.id, second.id] && !String(decoding: listed.body, as: UTF8.self).contains(mine.credential))
            let revoked = try await http.send(
                "DELETE", "\(admin)/\(Self.network)/credentials/\(mine.id)", token: ingest.adminToken)
            #expect(revoked.status == 200 && revoked.json["revoked"] as? Bool == true)
            #expect(try await http.send("GET", own, token: mine.credential).status == 401, "revoked at once")
            #expect(try await http.send("GET", own, token: second.credential).status == 200, "the other still works")
            let again = try await http.send("DELETE", "\(admin)/\(Self.network)/credentials/\(mine.id)", token: ingest.adminToken)
            #expect(again.status == 404 && again.json["reason"] as? String == "unknown-credential")
        }

        /// `ignoreInteractionType` in `global`: the upload is accepted, stored without
        /// it, and the answer says so; never a silent drop. Apple's Info.plist layout is read.
        @Test func aGlobalIgnoreInteractionTypeIsAcceptedStoredWithoutItAndReported() async throws {
            let (redis, ingest) = try await start()
            defer {
                ingest.stop()
                redis.stop()
            }
            let reply = try await http.send(
                "PUT", "\(ingest.adminURL)/v1/admin/advertised-apps/\(Self.app)",
                json: ["AttributionWindows": ["global": ["install": ["click": 3, "ignoreInteractionType": "view"]]]],
                token: ingest.adminToken)
            #expect(reply.status == 200, "\(reply.json)")
            let ignored = reply.json["ignored"] as? [String] ?? []
            #expect(ignored.count == 1 && ignored[0].hasPrefix("AttributionWindows.global.install.ignoreInteractionType"))
            let stored =
                try await redis.connect().send(RedisCommand("HGET", RegistryKeys.advertisedApps, String(Self.app)))
                .string ?? ""
            #expect(!stored.contains("ignoreInteractionType") && stored.contains("\"click\":3"), "\(stored)")
            let plain = try await http.send(
                "PUT", "\(ingest.adminURL)/v1/admin/advertised-apps/\(Self.app)", json: [:], token: ingest.adminToken)
            #expect(plain.status == 200 && plain.json["ignored"] == nil, "no `ignored` when nothing was")

            // Apple's Info.plist layout: read, not dropped.
            var plist = HTTPClientRequestBuilder(
                method: "PUT", url: "\(ingest.adminURL)/v1/admin/advertised-apps/\(Self.app)",
                body: #"<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict>"#
                    + "<key>CFBundleName</key><string>App</string><key>AdAttributionKit</key><dict>"
                    + "<key>AttributionCopyEndpoint</key><string>https://example.com</string>"
                    + "<key>OptInForReengagementPostbackCopies</key><true/></dict></dict></plist>")
            plist.token = ingest.adminToken
            plist.contentType = "application/x-plist"
            let applesLayout = try await http.send(plist)
            #expect(applesLayout.status == 200 && applesLayout.json["ignored"] == nil, "\(applesLayout.json)")
            let copies =
                try await redis.connect().send(RedisCommand("HGET", RegistryKeys.advertisedApps, String(Self.app)))
                .string ?? ""
            #expect(copies.contains("example.com") && copies.contains("ReengagementPostbackCopies\":true"), "\(copies)")
        }

        /// Deleting a network, a publisher app or an advertised app removes its registration and what was
        /// kept for it alone (credentials, refusal lists, app keys, schemas), and bumps the registry version
        /// the stages' caches watch; a second delete is a 404 with the id's reason.
        /// Dead letters page newest first over every partition, `next` leading to the page after: every
        /// entry listed once, none skipped, even when two partitions hold the same entry id.
        @Test func deadLettersPageWithoutGapsOrRepeats() async throws {
            let (redis, ingest) = try await start()
            defer {
                ingest.stop()
                redis.stop()
            }
            let partitions = Array(testPartitioning.partitions.prefix(3))
            var written: [String] = []
            for (offset, partition) in partitions.enumerated() {
                for millisecond in 0..<4 {
                    // Partitions 0 and 1 share ids; partition 2's interleave with them.
                    let id = "\(1_700_000_000_000 + millisecond * 2 + (offset == 2 ? 1 : 0))-0"
                    _ = try await redis.connect().send(
                        RedisCommand("XADD", StreamNames.deliveriesDead(partition), id, "postback-identifier", "p", "error", "e"))
                    written.append("\(partition.index)-\(id)")
                }
            }
            var listed: [String] = []
            var before: String?
            for _ in 0..<10 {
                let query = "count=5" + (before.map { "&before=\($0)" } ?? "")
                let page = try await http.send(
                    "GET", "\(ingest.adminURL)/v1/admin/dead-letters?\(query)", token: ingest.adminToken)
                #expect(page.status == 200 && page.json["total"] as? Int == 12, "\(page.json)")
                listed += (page.json["dead-letters"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
                before = page.json["next"] as? String
                if before == nil { break }
            }
            #expect(listed.count == 12 && Set(listed) == Set(written), "\(listed)")
            func order(_ id: String) -> [UInt64] {
                let parts = id.split(separator: "-").compactMap { UInt64($0) }
                return [parts[1], parts[2], parts[0]]
            }
            #expect(zip(listed, listed.dropFirst()).allSatisfy { order($0).lexicographicallyPrecedes(order($1)) == false })
            let bad = try await http.send(
                "GET", "\(ingest.adminURL)/v1/admin/dead-letters?before=yesterday", token: ingest.adminToken)
            #expect(bad.status == 400 && bad.json["reason"] as? String == "invalid-dead-letter-id")
        }

        @Test func deletingRegistrationsRemovesWhatWasKeptForThem() async throws {
            let (redis, ingest) = try await start()
            defer {
                ingest.stop()
                redis.stop()
            }
            let connection = redis.connect()
            try await register(ingest, network: Self.network)
            let admin = "\(ingest.adminURL)/v1/admin"
            let token = ingest.adminToken
            #expect(
                try await http.send(
                    "PUT", "\(admin)/publisher-apps/\(Self.publisher)",
                    json: ["AdNetworkIdentifiers": [Self.network, Self.network]], token: token
                ).status == 200)
            #expect(
                try await http.send(
                    "PUT", "\(admin)/advertised-apps/\(Self.app)", json: ["AttributionCooldown": ["install-cooldown-hours": 24]],
                    token: token
                ).status == 200)
            // Read back as stored: a network listed twice is listed once.
            let publisherRead = try await http.send("GET", "\(admin)/publisher-apps/\(Self.publisher)", token: token)
            #expect(publisherRead.json["AdNetworkIdentifiers"] as? [String] == [Self.network], "\(publisherRead.json)")
            let appRead = try await http.send("GET", "\(admin)/advertised-apps/\(Self.app)", token: token)
            #expect(
                (appRead.json["AttributionCooldown"] as? [String: Any])?["install-cooldown-hours"] as? Int == 24,
                "\(appRead.json)")
            // What GET answers is a PUT body: sent back as it is, it is taken.
            let sentBack = try await http.send(
                "PUT", "\(admin)/advertised-apps/\(Self.app)", raw: String(decoding: appRead.body, as: UTF8.self), token: token)
            #expect(sentBack.status == 200, "\(sentBack.json)")
            let schema: [String: Any] = [
                "windows": [["window": 0, "rules": [["when": ["sessions": 1], "fine": 1, "coarse": "low"]]]]
            ]
            let schemaReply = try await http.send(
                "PUT", "\(admin)/advertised-apps/\(Self.app)/conversion-value-schema", json: schema, token: token)
            #expect(schemaReply.status == 201, "\(schemaReply.json)")
            let credential = try await http.send("POST", "\(admin)/ad-networks/\(Self.network)/credentials", token: token)
            let appKey = try await http.send("POST", "\(admin)/advertised-apps/\(Self.app)/keys", token: token)
            #expect(credential.status == 201 && appKey.status == 201)
            _ = try await connection.pipeline([
                RedisCommand("LPUSH", RejectionLog.networkKey(Self.network), "{}"),
                RedisCommand("LPUSH", RejectionLog.unsignedKey(Self.network), "{}"),
                RedisCommand("HSET", RejectionLog.unsignedCounts, Self.network, "3"),
                RedisCommand("LPUSH", RejectionLog.appKey(String(Self.app)), "{}"),
            ])
            let version = try await connection.send(RedisCommand("GET", RegistryKeys.version)).string.flatMap { Int($0) } ?? 0

            let network = try await http.send("DELETE", "\(admin)/ad-networks/\(Self.network)", token: token)
            #expect(network.status == 200 && network.json["deleted"] as? Bool == true, "\(network.json)")
            let publisher = try await http.send("DELETE", "\(admin)/publisher-apps/\(Self.publisher)", token: token)
            #expect(publisher.status == 200, "\(publisher.json)")
            let app = try await http.send("DELETE", "\(admin)/advertised-apps/\(Self.app)", token: token)
            #expect(app.status == 200, "\(app.json)")

            let replies = try await connection.pipeline([
                RedisCommand("HEXISTS", RegistryKeys.adNetworks, Self.network),
                RedisCommand("HEXISTS", RegistryKeys.publisherApps, String(Self.publisher)),
                RedisCommand("HEXISTS", RegistryKeys.advertisedApps, String(Self.app)),
                RedisCommand("HLEN", RegistryKeys.networkCredentials),
                RedisCommand("HLEN", RegistryKeys.networkCredentialsIssued),
                RedisCommand("HLEN", RegistryKeys.appKeys), RedisCommand("HLEN", RegistryKeys.appKeysIssued),
                RedisCommand(
                    "EXISTS", RejectionLog.networkKey(Self.network), RejectionLog.unsignedKey(Self.network),
                    RejectionLog.appKey(String(Self.app))),
                RedisCommand("HEXISTS", RejectionLog.unsignedCounts, Self.network),
                RedisCommand("HLEN", RegistryKeys.currentSchemas), RedisCommand("HLEN", RegistryKeys.schemaVersions),
                RedisCommand("GET", RegistryKeys.version),
            ])
            #expect(replies.dropLast().map { $0.int } == Array(repeating: 0, count: replies.count - 1), "\(replies)")
            #expect((replies.last?.string.flatMap { Int($0) } ?? 0) >= version + 3, "the stages' caches see each deletion")
            let key = try #require(appKey.json["app-key"] as? String)
            let conversion = try await http.send(
                "POST", "\(ingest.ingestURL)/v1/conversions",
                json: [
                    "device-identifier": "d", "advertised-item-identifier": Self.app, "conversion-type": "download",
                    "time": Int(Date().timeIntervalSince1970 * 1000),
                ], token: key)
            #expect(conversion.status == 401 && conversion.json["reason"] as? String == "invalid-app-key")

            for (path, reason) in [
                ("ad-networks/\(Self.network)", "unknown-ad-network"),
                ("publisher-apps/\(Self.publisher)", "unknown-publisher-app"),
                ("advertised-apps/\(Self.app)", "unknown-advertised-app"),
            ] {
                let again = try await http.send("DELETE", "\(admin)/\(path)", token: token)
                #expect(again.status == 404 && again.json["reason"] as? String == reason, "\(path): \(again.json)")
                let read = try await http.send("GET", "\(admin)/\(path)", token: token)
                #expect(read.status == 404 && read.json["reason"] as? String == reason, "GET \(path): \(read.json)")
                #expect(try await http.send("DELETE", "\(admin)/\(path)").status == 401)
            }
        }
    }
}
