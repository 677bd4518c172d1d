import AttributionCrypto
import AttributionModel
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceRuntime
import TestSupport
import Testing

extension PipelineSuites {
    /// The dispatcher against a flaky reference receiver, as real processes: retries at the documented
    /// times, dead letters after 9 days, replay, advertiser copies and refused destinations. Postbacks
    /// are put on `postbacks` directly (as the scheduler's held queue would release them), so the test
    /// does not wait out the 24–48 h privacy delay.
    @Suite("Delivery: retries, dead letters, replay, copies", .serialized)
    struct DeliveryTests {
        static let app: ItemIdentifier = 1_200_000_001
        let http = HTTPTestClient()

        struct Pipeline {
            let redis: RedisServer
            let processes: PipelineProcesses
            let connection: RedisConnection
            let network = "delivery.adattributionkit"
        }

        func start(scale: Double, _ extra: [String: String] = [:]) async throws -> Pipeline {
            let redis = try await RedisServer.start()
            let processes = try PipelineProcesses(
                redis: redis, timeScale: scale, extraEnvironment: ["TIMER_POLL_MS": "10"].merging(extra) { $1 })
            try #require(try await http.waitUntilUp("\(processes.ingestURL)/health"), "ingest starts\n\(processes.logs())")
            try #require(try await http.waitUntilUp("\(processes.receiverURL)/health"), "receiver starts\n\(processes.logs())")
            let pipeline = Pipeline(redis: redis, processes: processes, connection: redis.connect())
            _ = try await processes.registerCampaign(
                network: pipeline.network, publicKeyPEM: SigningKey.generate().publicKey.pemRepresentation, publisher: 5_838_492,
                app: Self.app, http: http)
            return pipeline
        }

        func stop(_ pipeline: Pipeline) {
            pipeline.processes.stop()
            pipeline.redis.stop()
        }

        func control(_ pipeline: Pipeline, _ settings: [String: Any]) async throws {
            let reply = try await http.send("POST", "\(pipeline.processes.receiverURL)/control", json: settings)
            try #require(reply.status == 200, "receiver control: \(String(decoding: reply.body, as: UTF8.self))")
        }

        static func order(
            network: String, didWin: Bool = true, type: ConversionType = .download, id: String = UUID().uuidString.lowercased()
        ) -> PostbackOrder {
            PostbackOrder(
                payload: PostbackPayload(
                    adNetworkIdentifier: AdNetworkIdentifier(network)!, sourceIdentifier: "39", advertisedItemIdentifier: app,
                    publisherItemIdentifier: nil, conversionType: type,
                    marketplaceIdentifier: PostbackPayload.appStoreMarketplace,
                    postbackIdentifier: id, postbackSequenceIndex: 0, didWin: didWin),
                adInteractionType: .click, conversionValue: nil, coarseConversionValue: .high, countryCode: nil,
                isDevelopment: false)
        }

        /// Puts postbacks on `postbacks` as the scheduler's held queue releases them (compact form).
        func release(_ orders: [PostbackOrder], on pipeline: Pipeline) async throws {
            let now = WallClock.nowMilliseconds()
            _ = try await pipeline.connection.pipeline(
                orders.map {
                    StreamCommands.add(
                        StreamNames.postbacks(testPartitioning[0]), message: CompactHeldPostback.encode($0, dueAt: now))
                })
        }

        struct Attempt: Decodable {
            var postbackIdentifier: String
            var path: String
            var at: Milliseconds
            var accepted: Bool
            enum CodingKeys: String, CodingKey {
                case postbackIdentifier = "postback-identifier"
                case path, at, accepted
            }
        }

        func attempts(_ pipeline: Pipeline) async throws -> [Attempt] {
            let reply = try await http.send("GET", "\(pipeline.processes.receiverURL)/attempts")
            return try JSONDecoder().decode([Attempt].self, from: reply.body)
        }

        /// The receiver fails the first 3 attempts of each postback: the 4th delivers it, and the gaps follow
        /// the retry table (1, 5, 30 minutes, each up to 20 % later), here at 1 hour = 1 s.
        @Test func aReceiverFailingTheFirstKAttemptsGetsAttemptKPlusOneOnSchedule() async throws {
            let scale = 3_600.0
            let pipeline = try await start(scale: scale)
            defer { stop(pipeline) }
            try await control(pipeline, ["fail-first": 3])
            let orders = (0..<5).map { _ in Self.order(network: pipeline.network) }
            try await release(orders, on: pipeline)
            let delivered = try await eventually(timeout: .seconds(20), every: .milliseconds(100)) {
                try await attempts(pipeline).filter(\.accepted).count == orders.count
            }
            try #require(delivered, "every postback delivered\n\(pipeline.processes.logs())")
            let policy = TimePolicy(scale: scale)
            let bases = RetrySchedule.baseIntervals.prefix(3).map { policy.milliseconds($0) }
            for order in orders {
                let mine = try await attempts(pipeline).filter { $0.postbackIdentifier == order.payload.postbackIdentifier }
                #expect(mine.map(\.accepted) == [false, false, false, true], "attempts of \(order.payload.postbackIdentifier)")
                for (index, base) in bases.enumerated() where mine.count > index + 1 {
                    let gap = mine[index + 1].at - mine[index].at
                    // Not before its time; late by at most the jitter (20 %) plus polling and processing.
                    #expect(gap >= base - 5 && gap <= base + base / 5 + 400, "retry \(index + 1): \(gap) ms, base \(base) ms")
                }
            }
            #expect(try await streamLength(StreamNames.deliveriesDead, on: pipeline.connection) == 0)
        }

        /// The receiver stays down past 9 days (scaled): each postback is tried 10 times (1 + 9 retries), all
        /// within 9 days of the first attempt, then dead-lettered; the admin API lists them, and once the
        /// receiver is back a replay delivers every one.
        @Test func anEndpointDownPastNineDaysEndsInDeadLettersAndAReplayDelivers() async throws {
            let scale = 172_800.0
            let pipeline = try await start(scale: scale)
            defer { stop(pipeline) }
            try await control(pipeline, ["fail-share": 1])
            let orders = (0..<3).map { _ in Self.order(network: pipeline.network) }
            try await release(orders, on: pipeline)
            let dead = try await eventually(timeout: .seconds(30), every: .milliseconds(100)) {
                try await streamLength(StreamNames.deliveriesDead, on: pipeline.connection) == orders.count
            }
            try #require(dead, "dead-lettered\n\(pipeline.processes.logs())")
            let nineDays = TimePolicy(scale: scale).milliseconds(RetrySchedule.limit)
            for order in orders {
                let mine = try await attempts(pipeline).filter { $0.postbackIdentifier == order.payload.postbackIdentifier }
                #expect(mine.count == 1 + RetrySchedule.maximumRetries && mine.allSatisfy { !$0.accepted })
                if let first = mine.first, let last = mine.last { #expect(last.at - first.at <= nineDays) }
            }
            let token = pipeline.processes.adminToken
            let listed = try await http.send("GET", "\(pipeline.processes.adminURL)/v1/admin/dead-letters", token: token)
            let letters = listed.json["dead-letters"] as? [[String: Any]] ?? []
            #expect(listed.status == 200 && letters.count == orders.count)
            #expect(letters.allSatisfy { $0["attempts"] as? Int == 10 && $0["destination"] as? String == "ad-network" })
            #expect(
                Set(letters.compactMap { $0["postback-identifier"] as? String }) == Set(orders.map(\.payload.postbackIdentifier)))
            let unknown = try await http.send(
                "POST", "\(pipeline.processes.adminURL)/v1/admin/dead-letters/0-1-0/replay", token: token)
            #expect(unknown.status == 404)
            // A bare stream id names no partition: entry ids are unique only within one partition's stream.
            let bare = try await http.send(
                "POST", "\(pipeline.processes.adminURL)/v1/admin/dead-letters/1-0/replay", token: token)
            #expect(bare.status == 400 && bare.json["reason"] as? String == "invalid-dead-letter-id")
            let unauthorized = try await http.send("POST", "\(pipeline.processes.adminURL)/v1/admin/dead-letters/replay")
            #expect(unauthorized.status == 401)

            try await control(pipeline, ["fail-share": 0])
            // One by id, the rest all at once.
            let firstID = try #require(letters.last?["id"] as? String)
            let one = try await http.send(
                "POST", "\(pipeline.processes.adminURL)/v1/admin/dead-letters/\(firstID)/replay", token: token)
            #expect(one.status == 200 && one.json["replayed"] as? Int == 1)
            let rest = try await http.send("POST", "\(pipeline.processes.adminURL)/v1/admin/dead-letters/replay", token: token)
            #expect(rest.status == 200 && rest.json["replayed"] as? Int == orders.count - 1)
            let delivered = try await eventually(timeout: .seconds(10), every: .milliseconds(100)) {
                try await attempts(pipeline).filter(\.accepted).count == orders.count
            }
            #expect(delivered, "replayed postbacks delivered\n\(pipeline.processes.logs())")
            #expect(try await streamLength(StreamNames.deliveriesDead, on: pipeline.connection) == 0)
            #expect(pipeline.processes.receivedPostbacks().count == orders.count)
        }

        /// In-flight work of a deleted ad network: a postback already tried and
        /// failing gets no more attempts once the network is deleted, and one falling due afterwards is
        /// never sent; both are dead-lettered with the reason. Registered again, a replay delivers both to
        /// its postback URL as registered then.
        @Test func aDeletedNetworksPostbacksAreDeadLetteredAndAReplayDeliversThem() async throws {
            let scale = 60.0  // a minute is a second: the first retry waits 1 s
            let pipeline = try await start(scale: scale)
            defer { stop(pipeline) }
            let token = pipeline.processes.adminToken
            let admin = "\(pipeline.processes.adminURL)/v1/admin"
            try await control(pipeline, ["fail-share": 1])
            let tried = Self.order(network: pipeline.network)
            try await release([tried], on: pipeline)
            let failedOnce = try await eventually(timeout: .seconds(10), every: .milliseconds(20)) {
                try await !attempts(pipeline).isEmpty
            }
            try #require(failedOnce, "first attempt\n\(pipeline.processes.logs())")
            let deleted = try await http.send("DELETE", "\(admin)/ad-networks/\(pipeline.network)", token: token)
            try #require(deleted.status == 200, "\(deleted.json)")
            let later = Self.order(network: pipeline.network)
            try await release([later], on: pipeline)
            let dead = try await eventually(timeout: .seconds(15), every: .milliseconds(100)) {
                try await streamLength(StreamNames.deliveriesDead, on: pipeline.connection) == 2
            }
            try #require(dead, "both dead-lettered\n\(pipeline.processes.logs())")
            let listed = try await http.send("GET", "\(admin)/dead-letters", token: token)
            let letters = listed.json["dead-letters"] as? [[String: Any]] ?? []
            #expect(
                letters.count == 2
                    && letters.allSatisfy { ($0["error"] as? String)?.hasSuffix("is not registered") == true }, "\(listed.json)")
            let sent = try await attempts(pipeline)
            #expect(
                sent.allSatisfy { $0.postbackIdentifier == tried.payload.postbackIdentifier } && sent.count <= 2,
                "no attempt after the deletion (one may have been under way): \(sent.count)")

            try await control(pipeline, ["fail-share": 0])
            let again = try await http.send(
                "PUT", "\(admin)/ad-networks/\(pipeline.network)",
                json: [
                    "public-key": SigningKey.generate().publicKey.pemRepresentation,
                    "postback-url": "\(pipeline.processes.receiverURL)/postbacks",
                ], token: token)
            try #require(again.status == 200, "\(again.json)")
            let replayed = try await http.send("POST", "\(admin)/dead-letters/replay", token: token)
            #expect(replayed.status == 200 && replayed.json["replayed"] as? Int == 2, "\(replayed.json)")
            let delivered = try await eventually(timeout: .seconds(15), every: .milliseconds(100)) {
                Set(try await attempts(pipeline).filter(\.accepted).map(\.postbackIdentifier))
                    == [tried.payload.postbackIdentifier, later.payload.postbackIdentifier]
            }
            #expect(delivered, "replayed after registering again\n\(pipeline.processes.logs())")
        }

        /// A winning postback of an app with `AttributionCopyEndpoint` also goes to the advertiser's
        /// well-known path; non-winning ones and re-engagements (without the opt-in) do not.
        @Test func winnersAreCopiedToTheAdvertisersEndpoint() async throws {
            let pipeline = try await start(scale: 172_800)
            defer { stop(pipeline) }
            let advertised = try await http.send(
                "PUT", "\(pipeline.processes.adminURL)/v1/admin/advertised-apps/\(Self.app)",
                json: ["AttributionCopyEndpoint": pipeline.processes.receiverURL], token: pipeline.processes.adminToken)
            #expect(advertised.status == 200, "\(String(decoding: advertised.body, as: UTF8.self))")
            let winner = Self.order(network: pipeline.network)
            let loser = Self.order(network: pipeline.network, didWin: false)
            let reengagement = Self.order(network: pipeline.network, type: .reengagement)
            try await release([winner, loser, reengagement], on: pipeline)
            let arrived = try await eventually(timeout: .seconds(10), every: .milliseconds(100)) {
                try await attempts(pipeline).count >= 4
            }
            try #require(arrived, "\(pipeline.processes.logs())")
            try await Task.sleep(for: .milliseconds(500))  // nothing more should come
            let seen = try await attempts(pipeline).map { "\($0.postbackIdentifier) \($0.path)" }.sorted()
            let copyPath = CopyEndpoint.path
            #expect(
                seen
                    == [
                        "\(winner.payload.postbackIdentifier) /postbacks", "\(winner.payload.postbackIdentifier) \(copyPath)",
                        "\(loser.payload.postbackIdentifier) /postbacks", "\(reengagement.payload.postbackIdentifier) /postbacks",
                    ].sorted())
            // Both copies of the winner are the same bytes.
            let bodies = pipeline.processes.receivedPostbacks().filter {
                ($0["payload"] as? [String: Any])?["postback-identifier"] as? String == winner.payload.postbackIdentifier
            }.compactMap { $0["body"] as? [String: Any] }
            #expect(
                bodies.count == 2
                    && bodies.map { $0["jws-string"] as? String }.allSatisfy { $0 == bodies[0]["jws-string"] as? String })
        }

        /// Registration refuses http and private addresses; a URL that changes to a private address after
        /// registration (here written straight into the registry) is refused at delivery and dead-lettered
        /// at once, without retries.
        /// A destination answering 307 to another URL: the dispatcher never follows it. Every attempt is a
        /// failure at the registered URL, retried on schedule; nothing reaches the redirect's target.
        @Test func redirectsAreNeverFollowed() async throws {
            let pipeline = try await start(scale: 3_600)
            defer { stop(pipeline) }
            try await control(
                pipeline,
                [
                    "fail-first": 1_000, "failure": "redirect",
                    // The receiver's other postback path: an attempt there would be a followed redirect.
                    "redirect-to": "\(pipeline.processes.receiverURL)\(CopyEndpoint.path)",
                ])
            let orders = (0..<3).map { _ in Self.order(network: pipeline.network) }
            try await release(orders, on: pipeline)
            let retried = try await eventually(timeout: .seconds(20), every: .milliseconds(100)) {
                try await attempts(pipeline).count >= 3 * orders.count
            }
            try #require(retried, "each postback retried after its 307\n\(pipeline.processes.logs())")
            let seen = try await attempts(pipeline)
            #expect(seen.allSatisfy { $0.path == "/postbacks" && !$0.accepted }, "\(seen.map(\.path))")
            #expect(Set(seen.map(\.postbackIdentifier)) == Set(orders.map(\.payload.postbackIdentifier)))
        }

        @Test func privateAndPlainHTTPDestinationsAreRefused() async throws {
            let pipeline = try await start(scale: 172_800)
            defer { stop(pipeline) }
            let key = SigningKey.generate().publicKey.pemRepresentation
            for (url, reason) in [
                ("http://postbacks.example.com/p", "destination-not-https"),
                ("https://10.1.2.3/p", "destination-private-address"),
                ("https://[::1]/p", "destination-private-address"), ("https://localhost/p", "destination-private-address"),
            ] {
                let reply = try await http.send(
                    "PUT", "\(pipeline.processes.adminURL)/v1/admin/ad-networks/private.adattributionkit",
                    json: ["public-key": key, "postback-url": url], token: pipeline.processes.adminToken)
                #expect(reply.status == 400 && reply.json["reason"] as? String == reason, "\(url): \(reply.json)")
            }
            let registration = AdNetworkRegistration(
                adNetworkIdentifier: AdNetworkIdentifier("moved.adattributionkit")!, publicKey: "{}",
                postbackURL: "https://127.0.0.2:9/p")
            _ = try await pipeline.connection.send(
                RedisCommand(
                    "HSET", RegistryKeys.adNetworks, "moved.adattributionkit",
                    String(decoding: try JSONCoding.encoder.encode(registration), as: UTF8.self)))
            try await release([Self.order(network: "moved.adattributionkit")], on: pipeline)
            let dead = try await eventually(timeout: .seconds(10), every: .milliseconds(100)) {
                try await streamLength(StreamNames.deliveriesDead, on: pipeline.connection) == 1
            }
            try #require(dead, "\(pipeline.processes.logs())")
            let record = try #require(try await streamRecords(StreamNames.deliveriesDead, on: pipeline.connection).first)
            #expect(record.text("error") == "destination-private-address")
            #expect(try await attempts(pipeline).isEmpty)
        }

        /// SIGKILL of the dispatcher in the middle of a run: a new replica claims what the dead one held,
        /// nothing is lost, and after deduplication the receiver has each postback exactly once.
        ///
        /// What the dead replica had in flight comes back when its lease ends: the delivery timeout times
        /// the destination's queue in permits, plus 5 s (`DestinationLanes.lease`), real time. With the
        /// default 10 s timeout and 600 postbacks queued for one host, that is up to 175 s; the test
        /// sets a 2 s timeout (at most 39 s) and waits a minute.
        @Test func aKilledDispatcherLosesNothing() async throws {
            let pipeline = try await start(scale: 172_800, ["DELIVERY_TIMEOUT_MS": "2000"])
            defer { stop(pipeline) }
            let orders = (0..<600).map { _ in Self.order(network: pipeline.network) }
            try await release(orders, on: pipeline)
            try #require(
                try await eventually(timeout: .seconds(20), every: .milliseconds(5)) {
                    pipeline.processes.receivedPostbacks().count >= 30
                })
            pipeline.processes.kill("dispatcher")
            let atKill = pipeline.processes.receivedPostbacks().count
            print("aKilledDispatcherLosesNothing: SIGKILL after \(atKill) of \(orders.count) postbacks were received")
            try pipeline.processes.startDispatcher()
            let all = try await eventually(timeout: .seconds(60), every: .milliseconds(200)) {
                pipeline.processes.receivedPostbacks().count >= orders.count
            }
            #expect(all, "all delivered after the restart (\(atKill) before the kill)\n\(pipeline.processes.logs())")
            let received = pipeline.processes.receivedPostbacks().compactMap {
                ($0["payload"] as? [String: Any])?["postback-identifier"] as? String
            }
            #expect(received.count == orders.count && Set(received) == Set(orders.map(\.payload.postbackIdentifier)))
            let pending = try await pendingCount(StreamNames.postbacks, group: "dispatcher", on: pipeline.connection)
            #expect(pending == 0)
            #expect(try await streamLength(StreamNames.deliveriesDead, on: pipeline.connection) == 0)
            #expect(atKill < orders.count, "the kill landed before the run finished")
        }

        /// Key rotation: postbacks signed before and after a dispatcher restarts with new keys (production
        /// and test postbacks' both) verify with Python's `cryptography` against the published JWKS, which
        /// lists the old keys until the grace (`SIGNING_KEY_GRACE_HOURS`, 240 h = 5 s here) has passed, and
        /// then only the new ones.
        @Test func rotatedKeysStayPublishedForTheGraceAndVerifyInPython() async throws {
            let pipeline = try await start(scale: 172_800)
            defer { stop(pipeline) }
            var test = Self.order(network: pipeline.network)
            test.isTestPostback = true
            try await release([Self.order(network: pipeline.network)], on: pipeline)
            try await releaseTestPostback(test, on: pipeline)
            try #require(try await eventually(timeout: .seconds(10)) { pipeline.processes.receivedPostbacks().count == 2 })

            let rotated = pipeline.processes.directory.appendingPathComponent("rotated.pem")
            let rotatedTest = pipeline.processes.directory.appendingPathComponent("rotated-test.pem")
            for file in [rotated, rotatedTest] {
                try SigningKey.generate().pemRepresentation.write(to: file, atomically: true, encoding: .utf8)
            }
            pipeline.processes.kill("dispatcher")
            try pipeline.processes.start(
                "dispatcher", port: try freeLoopbackPort(),
                [
                    "SIGNING_KEY_FILE": rotated.path, "SIGNING_KEY_ID": "rotated/1", "TEST_SIGNING_KEY_FILE": rotatedTest.path,
                    "TEST_SIGNING_KEY_ID": "rotated-test/1",
                ])
            test.payload.postbackIdentifier = UUID().uuidString.lowercased()
            try await release([Self.order(network: pipeline.network)], on: pipeline)
            try await releaseTestPostback(test, on: pipeline)
            try #require(
                try await eventually(timeout: .seconds(10)) { pipeline.processes.receivedPostbacks().count == 4 },
                "\(pipeline.processes.logs())")

            let jwksURL = "\(pipeline.processes.ingestURL)/.well-known/jwks.json"
            func kids() async throws -> Set<String> {
                let set = try JSONDecoder().decode(JWKSet.self, from: try await http.send("GET", jwksURL).body)
                return Set(set.keys.compactMap(\.kid).filter { !$0.contains("development") })
            }
            let jwks = try await http.send("GET", jwksURL).body
            let before = try await kids()
            // The first dispatcher generated its test key: its kid is the default with the key's fingerprint.
            let generatedTest = try #require(before.first { $0.hasPrefix("attribution-pipeline-test/0-") }, "\(before)")
            let all: Set = [pipeline.processes.signingKeyID, generatedTest, "rotated/1", "rotated-test/1"]
            #expect(before == all)
            let bodies = pipeline.processes.receivedPostbacks().compactMap { $0["body"] }
            let verifiedKids = try Self.verifyInPython(jwks: jwks, bodies: try JSONSerialization.data(withJSONObject: bodies))
            #expect(Set(verifiedKids) == all && verifiedKids.count == 4)

            let retired = try await eventually(timeout: .seconds(15), every: .milliseconds(250)) {
                try await kids() == ["rotated/1", "rotated-test/1"]
            }
            #expect(retired, "the old keys leave the JWKS after their grace, the new ones stay")
        }

        /// A test postback as the scheduler releases it: due now, an envelope (never the held form).
        func releaseTestPostback(_ order: PostbackOrder, on pipeline: Pipeline) async throws {
            let envelope = Envelope(
                id: order.payload.postbackIdentifier, time: WallClock.nowMilliseconds(), body: .postbackDue(order))
            _ = try await pipeline.connection.send(
                StreamCommands.add(StreamNames.postbacks(testPartitioning[0]), message: envelope.encoded()))
        }

        /// ES256 JWS verification written against `cryptography` alone: returns the kid that verified each body.
        static func verifyInPython(jwks: Data, bodies: Data) throws -> [String] {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            try jwks.write(to: directory.appendingPathComponent("jwks.json"))
            try bodies.write(to: directory.appendingPathComponent("bodies.json"))
            let script = """
                import base64, json, sys
                from cryptography.hazmat.primitives import hashes
                from cryptography.hazmat.primitives.asymmetric import ec, utils
                def b64(s): return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
                keys = {k["kid"]: k for k in json.load(open(sys.argv[1]))["keys"]}
                kids = []
                for body in json.load(open(sys.argv[2])):
                    h, p, s = body["jws-string"].split(".")
                    header = json.loads(b64(h))
                    assert header["alg"] == "ES256", header
                    k = keys[header["kid"]]
                    assert k["kty"] == "EC" and k["crv"] == "P-256", k
                    key = ec.EllipticCurvePublicNumbers(
                        int.from_bytes(b64(k["x"]), "big"), int.from_bytes(b64(k["y"]), "big"), ec.SECP256R1()).public_key()
                    raw = b64(s)
                    der = utils.encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
                    key.verify(der, (h + "." + p).encode(), ec.ECDSA(hashes.SHA256()))
                    kids.append(header["kid"])
                print(json.dumps(kids))
                """
            let data = try Python.run(
                script,
                arguments: [
                    directory.appendingPathComponent("jwks.json").path, directory.appendingPathComponent("bodies.json").path,
                ])
            return try JSONDecoder().decode([String].self, from: data)
        }
    }
}
