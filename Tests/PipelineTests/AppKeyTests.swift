import Foundation
import TestSupport
import Testing

extension PipelineSuites {
    /// App keys with ids: issued, listed without the keys, several live at once
    /// for rotation, and revoked.
    @Suite("App keys")
    struct AppKeyTests {
        let http = HTTPTestClient()
        static let app = 7_345_101

        @Test func keysAreListedRotatedAndRevoked() async throws {
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            let ingest = try PipelineProcesses(redis: redis, timeScale: 1, only: ["ingest"], inProcess: true)
            defer { ingest.stop() }
            try #require(try await http.waitUntilUp("\(ingest.ingestURL)/health"), "ingest started\n\(ingest.logs())")
            let admin = "\(ingest.adminURL)/v1/admin/advertised-apps/\(Self.app)"
            #expect(try await http.send("PUT", admin, json: [:], token: ingest.adminToken).status == 200)
            func issue() async throws -> (key: String, id: String) {
                let reply = try await http.send("POST", "\(admin)/keys", token: ingest.adminToken)
                try #require(reply.status == 201, "\(reply.json)")
                return (try #require(reply.json["app-key"] as? String), try #require(reply.json["key-identifier"] as? String))
            }
            func conversion(_ key: String) async throws -> (status: Int, reason: String?) {
                let reply = try await http.send(
                    "POST", "\(ingest.ingestURL)/v1/conversions",
                    json: [
                        "device-identifier": "key-device", "advertised-item-identifier": Self.app,
                        "conversion-type": "download", "time": Int(Date().timeIntervalSince1970 * 1000),
                    ], token: key)
                return (reply.status, reply.json["reason"] as? String)
            }
            let old = try await issue()
            let new = try await issue()
            let listed = try await http.send("GET", "\(admin)/keys", token: ingest.adminToken)
            let ids = (listed.json["keys"] as? [[String: Any]] ?? []).compactMap { $0["key-identifier"] as? String }
            #expect(Set(ids) == [old.id, new.id], "both keys live at once: \(listed.json)")
            #expect(!String(decoding: listed.body, as: UTF8.self).contains(old.key), "the list never shows a key")

            // Rotation: the new key works, the old one is revoked (before any use, so no replica remembers it).
            #expect(try await conversion(new.key).status == 202)
            let revoked = try await http.send("DELETE", "\(admin)/keys/\(old.id)", token: ingest.adminToken)
            #expect(revoked.status == 200 && revoked.json["revoked"] as? Bool == true, "\(revoked.json)")
            let refused = try await conversion(old.key)
            #expect(refused.status == 401 && refused.reason == "invalid-app-key", "\(refused)")
            #expect(try await conversion(new.key).status == 202, "the other key still works")
            let after = try await http.send("GET", "\(admin)/keys", token: ingest.adminToken)
            #expect((after.json["keys"] as? [[String: Any]])?.compactMap { $0["key-identifier"] as? String } == [new.id])
            let again = try await http.send("DELETE", "\(admin)/keys/\(old.id)", token: ingest.adminToken)
            #expect(again.status == 404 && again.json["reason"] as? String == "unknown-app-key")
            #expect(try await http.send("GET", "\(admin)/keys").status == 401, "the admin token is required")
        }
    }
}
