import AttributionCrypto
import AttributionModel
import Foundation
import RedisStreams
import TestSupport
import Testing

extension PipelineSuites {
    /// The measurement partner's loop, as real processes: an app's conversion-value schema, a campaign
    /// whose devices report revenue through `POST /v1/activity`, and the collector that verifies the
    /// postbacks, decodes their values back into revenue ranges, reports, and forwards them (through a
    /// partner endpoint that fails its first request).
    @Suite("Conversion-value schemas and the collector", .serialized)
    struct ValueSchemaTests {
        static let app: ItemIdentifier = 1_300_000_001
        static let publisher: ItemIdentifier = 5_838_492
        let http = HTTPTestClient()

        static let schema = ConversionValueSchema(windows: [
            .init(
                window: 0,
                rules: [
                    .init(when: .init(revenue: ["USD": 20]), fine: 60, coarse: .high),
                    .init(when: .init(revenue: ["USD": 5]), fine: 42, coarse: .high),
                    .init(when: .init(revenue: ["USD": 1]), fine: 10, coarse: .medium),
                    .init(when: .init(sessions: 1), fine: 1, coarse: .low),
                ])
        ])

        @Test func revenueBecomesValuesThatTheCollectorDecodesReportsAndForwards() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            let pipeline = try PipelineProcesses(
                redis: redis, timeScale: 172_800, extraEnvironment: ["CROWD_TIER_THRESHOLDS": "1,1,1"], inProcess: true)
            defer { pipeline.stop() }
            try #require(try await http.waitUntilUp("\(pipeline.ingestURL)/health"), "ingest starts\n\(pipeline.logs())")
            let admin = pipeline.adminToken
            let network = "schema.adattributionkit"
            let key = SigningKey.generate()
            let appKey = try await pipeline.registerCampaign(
                network: network, publicKeyPEM: key.publicKey.pemRepresentation, publisher: Self.publisher, app: Self.app,
                http: http)

            // The schema: version 1, then refused input names its problem.
            let put = try await http.send(
                "PUT", "\(pipeline.adminURL)/v1/admin/advertised-apps/\(Self.app)/conversion-value-schema",
                json: try JSONSerialization.jsonObject(with: JSONCoding.encoder.encode(Self.schema)), token: admin)
            #expect(put.status == 201 && put.json["version"] as? Int == 1, "\(put.json)")
            let bad = try await http.send(
                "PUT", "\(pipeline.adminURL)/v1/admin/advertised-apps/\(Self.app)/conversion-value-schema",
                json: ["windows": [["window": 0, "rules": [["when": [:], "fine": 64, "coarse": "low"]]]]], token: admin)
            #expect(bad.status == 400 && bad.json["reason"] as? String == "invalid-schema", "\(bad.json)")
            let misspelt = try await http.send(
                "PUT", "\(pipeline.adminURL)/v1/admin/advertised-apps/\(Self.app)/conversion-value-schema",
                json: ["windows": [["window": 0, "rules": [["when": ["sesions": 1], "fine": 4, "coarse": "low"]]]]], token: admin)
            #expect(misspelt.status == 400 && misspelt.json["reason"] as? String == "unknown-key", "\(misspelt.json)")
            #expect((misspelt.json["detail"] as? String)?.hasPrefix("windows.0.rules.0.when.sesions ") == true)
            let stored = try await http.send(
                "GET", "\(pipeline.adminURL)/v1/admin/advertised-apps/\(Self.app)/conversion-value-schema/1", token: admin)
            #expect(stored.status == 200)

            // The read-only evaluation an SDK may call instead.
            let evaluated = try await http.send(
                "POST", "\(pipeline.ingestURL)/v1/conversion-values/evaluate",
                json: ["advertised-item-identifier": Self.app, "window": 0, "revenue": ["USD": 7.5]], token: appKey)
            #expect(evaluated.status == 200 && evaluated.json["fineConversionValue"] as? Int == 42, "\(evaluated.json)")
            #expect(evaluated.json["changed"] as? Bool == true && evaluated.json["version"] as? Int == 1)
            // Refused as the event routes refuse: an unknown key 401, another app's key 403; version 0 is 400.
            let other = Self.app + 1
            _ = try await http.send("PUT", "\(pipeline.adminURL)/v1/admin/advertised-apps/\(other)", json: [:], token: admin)
            let otherKey =
                try await http.send(
                    "POST", "\(pipeline.adminURL)/v1/admin/advertised-apps/\(other)/keys", token: admin
                ).json["app-key"] as? String
            for (token, version, status, reason) in [
                ("ak_nope", 1, 401, "invalid-app-key"), (otherKey ?? "", 1, 403, "app-key-mismatch"),
                (appKey, 0, 400, "invalid-version"),
            ] {
                let refused = try await http.send(
                    "POST", "\(pipeline.ingestURL)/v1/conversion-values/evaluate",
                    json: ["advertised-item-identifier": Self.app, "window": 0, "version": version], token: token)
                #expect(refused.status == status && refused.json["reason"] as? String == reason, "\(refused.json)")
            }

            // A partner endpoint that fails its first request, and the collector in front of it.
            let sinkPort = try freeLoopbackPort()
            let sinkFile = pipeline.directory.appendingPathComponent("forwarded.jsonl")
            try pipeline.start(
                "sink", executable: "/usr/bin/env", arguments: ["python3", "-c", Self.sink, String(sinkPort), sinkFile.path],
                port: nil)
            let schemaFile = pipeline.directory.appendingPathComponent("schemas.json")
            try Data("{\"\(Self.app)\": \(String(decoding: stored.body, as: UTF8.self))}".utf8).write(to: schemaFile)
            let collectorPort = try freeLoopbackPort()
            let collectorURL = "http://127.0.0.1:\(collectorPort)"
            let reportDirectory = pipeline.directory.appendingPathComponent("report")
            try pipeline.start(
                "collector", executable: "attribution",
                arguments: [
                    "collector", "--port", String(collectorPort), "--jwks-url", "\(pipeline.ingestURL)/.well-known/jwks.json",
                    "--output", pipeline.directory.appendingPathComponent("collected.jsonl").path, "--schema-file",
                    schemaFile.path,
                    "--report-dir", reportDirectory.path, "--forward-url", "http://127.0.0.1:\(sinkPort)/partner",
                    "--time-scale", "172800",
                ], port: nil)
            try #require(try await http.waitUntilUp("\(collectorURL)/health"), "collector starts\n\(pipeline.logs())")
            let moved = try await http.send(
                "PUT", "\(pipeline.adminURL)/v1/admin/ad-networks/\(network)",
                json: ["public-key": key.publicKey.pemRepresentation, "postback-url": "\(collectorURL)/postbacks"], token: admin)
            #expect(moved.status == 200)

            // The campaign: each device clicks and installs; then the app team uploads schema version 2
            // (every fine value changed), and only then do the devices open the app and spend: their
            // conversions keep version 1, in force when they were attributed.
            let spends: [Decimal] = [0, 0.5, 2, 3, 4.99, 5, 6, 12, 19.99, 20, 35, 100]
            var expected: [Int] = []
            var installs: [(device: String, time: Milliseconds)] = []
            for index in spends.indices {
                let device = "schema-device-\(index)"
                let t0 = Milliseconds(Date().timeIntervalSince1970 * 1000)
                let payload = ImpressionPayload(
                    impressionIdentifier: UUID().uuidString, adNetworkIdentifier: AdNetworkIdentifier(network)!,
                    advertisedItemIdentifier: Self.app, publisherItemIdentifier: Self.publisher, sourceIdentifier: 5239,
                    timestamp: t0 - 3_000)
                let click = try await http.send(
                    "POST", "\(pipeline.ingestURL)/v1/impressions",
                    json: [
                        "device-identifier": device,
                        "impression": try CompactJWS.sign(payload: JSONCoding.encoder.encode(payload), keyID: network, with: key),
                        "interaction": ["type": "click", "loaded-at": t0 - 3_000, "time": t0 - 2_000],
                    ])
                #expect(click.status == 202)
                try await Task.sleep(for: .milliseconds(20))
                let install = try await http.send(
                    "POST", "\(pipeline.ingestURL)/v1/conversions",
                    json: [
                        "device-identifier": device, "advertised-item-identifier": Self.app, "conversion-type": "download",
                        "time": t0, "country-code": "US",
                    ], token: appKey)
                #expect(install.status == 202)
                installs.append((device, t0))
            }
            try await Task.sleep(for: .milliseconds(400))  // the conversions settle (250 ms) and are planned
            var version2 = Self.schema
            for index in version2.windows[0].rules.indices { version2.windows[0].rules[index].fine += 1 }
            let put2 = try await http.send(
                "PUT", "\(pipeline.adminURL)/v1/admin/advertised-apps/\(Self.app)/conversion-value-schema",
                json: try JSONSerialization.jsonObject(with: JSONCoding.encoder.encode(version2)), token: admin)
            #expect(put2.status == 201 && put2.json["version"] as? Int == 2)
            for ((device, t0), spend) in zip(installs, spends) {
                let common: [String: Any] = ["device-identifier": device, "advertised-item-identifier": Self.app]
                // A session, then the spend in two purchases, so totals have to add up.
                var reports: [[String: Any]] = [["time": t0 + 5, "sessions": 1]]
                let half = spend / 2
                for (offset, amount) in [(10, half), (15, spend - half)] where amount > 0 {
                    reports.append(["time": t0 + Milliseconds(offset), "revenue": ["USD": NSDecimalNumber(decimal: amount)]])
                }
                for json in reports {
                    let reply = try await http.send(
                        "POST", "\(pipeline.ingestURL)/v1/activity", json: json.merging(common) { a, _ in a }, token: appKey)
                    #expect(reply.status == 202, "\(reply.json)")
                }
                let totals = ActivityTotals(sessions: 1, revenue: spend > 0 ? ["USD": spend] : [:])
                expected.append(Self.schema.evaluate(window: 0, totals: totals, previous: nil).value!.fine)
            }
            // Evaluation follows the current version unless asked for another.
            let current = try await http.send(
                "POST", "\(pipeline.ingestURL)/v1/conversion-values/evaluate",
                json: ["advertised-item-identifier": Self.app, "window": 0, "revenue": ["USD": 7.5]], token: appKey)
            #expect(current.json["fineConversionValue"] as? Int == 43 && current.json["version"] as? Int == 2)
            let pinned = try await http.send(
                "POST", "\(pipeline.ingestURL)/v1/conversion-values/evaluate",
                json: ["advertised-item-identifier": Self.app, "window": 0, "revenue": ["USD": 7.5], "version": 1], token: appKey)
            #expect(pinned.json["fineConversionValue"] as? Int == 42)

            // Window 0 ends 2 days (1 s) after each install; its postback follows within 24–48 h (0.5–1 s).
            let arrived = try await eventually(timeout: .seconds(20), every: .milliseconds(200)) {
                let report = try await http.send("GET", "\(collectorURL)/report").json
                let rows = report["rows"] as? [[String: Any]] ?? []
                return rows.filter { ($0["key"] as? [String: Any])?["window"] as? Int == 0 }
                    .reduce(0) { $0 + ($1["postbacks"] as? Int ?? 0) } >= spends.count
            }
            try #require(arrived, "first-window postbacks at the collector\n\(pipeline.logs())")

            let report = try await http.send("GET", "\(collectorURL)/report").json
            let row = try #require(
                (report["rows"] as? [[String: Any]] ?? []).first { ($0["key"] as? [String: Any])?["window"] as? Int == 0 })
            let fineValues = row["fine-values"] as? [String: Int] ?? [:]
            let expectedCounts = Dictionary(expected.map { (String($0), 1) }, uniquingKeysWith: +)
            #expect(fineValues == expectedCounts, "fine values received \(fineValues), simulated \(expectedCounts)")
            #expect((row["key"] as? [String: Any])?["tier"] as? String == "3")
            #expect(row["decoded"] as? Int == spends.count)
            // The decoded revenue brackets the simulated revenue: ≥ the sum of lower bounds, and the
            // devices under 20 USD (the top rule is unbounded) below the sum of upper bounds.
            let total = spends.reduce(0, +)
            let atLeast = try #require((row["revenue-at-least"] as? [String: Any])?["USD"] as? NSNumber).decimalValue
            #expect(atLeast <= total && atLeast == 1 * 3 + 5 * 4 + 20 * 3, "revenue at least \(atLeast)")
            #expect((row["revenue-below"] as? [String: Any])?["USD"] == nil, "unbounded: some devices reached the top rule")

            // A duplicate delivery is acknowledged but counted once.
            let line = try #require(
                String(
                    decoding: try Data(contentsOf: pipeline.directory.appendingPathComponent("collected.jsonl")), as: UTF8.self
                )
                .split(separator: "\n").first)
            let body = try #require((try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["body"])
            let again = try await http.send("POST", "\(collectorURL)/postbacks", json: body)
            #expect(again.status == 200 && again.json["duplicate"] as? Bool == true)
            let after = try await http.send("GET", "\(collectorURL)/report").json
            #expect(after["postbacks"] as? Int == report["postbacks"] as? Int)

            // The report files, and every decoded postback forwarded once despite the partner's first failure.
            let csv = try await eventually(timeout: .seconds(5)) {
                (try? String(contentsOf: reportDirectory.appendingPathComponent("report.csv"), encoding: .utf8))?
                    .contains("schema.adattributionkit,5239,0,") == true  // window 0: the only one the apps reported in
            }
            #expect(csv, "report.csv written")
            let forwarded = try await eventually(timeout: .seconds(10), every: .milliseconds(200)) {
                let lines = (try? String(contentsOf: sinkFile, encoding: .utf8))?.split(separator: "\n") ?? []
                return Set(
                    lines.compactMap {
                        (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["postback-identifier"]
                            as? String
                    }
                )
                .count >= (report["postbacks"] as? Int ?? 0)
            }
            #expect(forwarded, "forwarded to the partner\n\(pipeline.logs())")
        }

        /// A partner endpoint: answers 500 to its first request, then 200, appending each accepted body.
        static let sink = """
            import http.server, sys
            port, path = int(sys.argv[1]), sys.argv[2]
            seen = {"count": 0}
            class Handler(http.server.BaseHTTPRequestHandler):
                def do_POST(self):
                    body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                    seen["count"] += 1
                    if seen["count"] == 1:
                        self.send_response(500); self.end_headers(); return
                    with open(path, "ab") as f: f.write(body + b"\\n")
                    self.send_response(200); self.end_headers()
                def log_message(self, *args): pass
            http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
            """
    }
}
