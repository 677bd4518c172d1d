import Foundation

extension PipelineSuites.HostileInputTests {
    /// Every admin route without the token, with a wrong one and with near misses of it; values the
    /// routes must refuse even with the token; event routes with missing, forged and foreign app keys.
    static func credentialCases(admin: String, appKey: String, otherAppKey: String, app: Int) -> [RawCase] {
        let json = ("Content-Type", "application/json")
        let routes: [(String, String, String?)] = [
            ("PUT", "/v1/admin/ad-networks/auth.net", #"{"public-key":"x","postback-url":"https://example.com/p"}"#),
            ("GET", "/v1/admin/ad-networks/\(network)", nil),
            ("GET", "/v1/admin/ad-networks/\(network)/rejections", nil),
            ("PUT", "/v1/admin/publisher-apps/91002", #"{"AdNetworkIdentifiers":["\#(network)"]}"#),
            ("PUT", "/v1/admin/advertised-apps/\(app)", "{}"),
            ("POST", "/v1/admin/advertised-apps/\(app)/keys", nil),
            ("GET", "/v1/admin/advertised-apps/\(app)/rejections", nil),
            ("GET", "/v1/admin/dead-letters", nil),
            ("POST", "/v1/admin/dead-letters/replay", nil),
            ("POST", "/v1/admin/dead-letters/1-0/replay", nil),
            ("PUT", "/v1/admin/advertised-apps/\(app)/conversion-value-schema", "{}"),
            ("GET", "/v1/admin/advertised-apps/\(app)/conversion-value-schema", nil),
            ("GET", "/v1/admin/advertised-apps/\(app)/conversion-value-schema/1", nil),
            ("DELETE", "/v1/admin/devices/valid-0", nil),
        ]
        let basic = Data("admin:\(admin)".utf8).base64EncodedString()
        // nil: no Authorization header; the query form puts the token where only a header counts.
        let credentials: [(String, String?)] = [
            ("no token", nil), ("wrong token", "Bearer wrong"), ("token plus a byte", "Bearer \(admin)x"),
            ("token minus a byte", "Bearer \(admin.dropLast())"), ("lower-case scheme", "bearer \(admin)"),
            ("Basic scheme", "Basic \(basic)"), ("tab instead of a space", "Bearer\t\(admin)"), ("empty bearer", "Bearer "),
            ("two spaces", "Bearer  \(admin)"), ("app key", "Bearer \(appKey)"), ("token as a query parameter", nil),
        ]
        var cases: [RawCase] = []
        for (method, path, body) in routes {
            for (name, value) in credentials {
                let target = name == "token as a query parameter" ? "\(path)?token=\(admin)&access_token=\(admin)" : path
                let headers = (body == nil ? [] : [json]) + (value.map { [("Authorization", $0)] } ?? [])
                cases.append(
                    RawCase(
                        name: "\(method) \(path): \(name)",
                        bytes: request(method, target, body.map { Array($0.utf8) }, headers: headers),
                        admin: true, statuses: [401], reason: "unauthorized"))
            }
        }
        // With the token: ids and values the routes refuse (a dead letter's id is a stream id; one of
        // digits and dashes Redis cannot find is unknown). An unknown query parameter is ignored, a
        // repeated one read once, and a device id is glob-escaped before it names keys: `*` erases
        // the device called `*`, no other.
        let token = [("Authorization", "Bearer \(admin)")]
        let withToken: [(String, String, Int, String?)] = [
            ("POST", "/v1/admin/dead-letters/99999999999999999999-0/replay", 400, "invalid-dead-letter-id"),
            ("POST", "/v1/admin/dead-letters/1-2-3/replay", 404, "unknown-dead-letter"),
            ("POST", "/v1/admin/dead-letters/-/replay", 400, "invalid-dead-letter-id"),
            ("POST", "/v1/admin/dead-letters/1--1/replay", 400, "invalid-dead-letter-id"),
            ("POST", "/v1/admin/dead-letters/%C2%BD/replay", 400, "invalid-dead-letter-id"),
            ("POST", "/v1/admin/dead-letters/%D9%A1-0/replay", 400, "invalid-dead-letter-id"),
            ("POST", "/v1/admin/dead-letters/0-0/replay", 400, "invalid-dead-letter-id"),
            ("GET", "/v1/admin/dead-letters?count=-1", 400, "value-out-of-range"),
            ("GET", "/v1/admin/dead-letters?count=0", 400, "value-out-of-range"),
            ("GET", "/v1/admin/dead-letters?count=99999999999999999999", 400, "value-out-of-range"),
            ("GET", "/v1/admin/dead-letters?count=abc", 400, "value-out-of-range"),
            ("GET", "/v1/admin/dead-letters?start=zzz", 200, nil),
            ("GET", "/v1/admin/dead-letters?count=1&count=2", 200, nil),
            ("GET", "/v1/admin/advertised-apps/\(app)/conversion-value-schema/0", 400, "invalid-version"),
            ("GET", "/v1/admin/advertised-apps/\(app)/conversion-value-schema/-1", 400, "invalid-version"),
            ("GET", "/v1/admin/advertised-apps/\(app)/conversion-value-schema/99999999999999999999", 400, "invalid-version"),
            ("DELETE", "/v1/admin/devices/" + String(repeating: "d", count: 200), 400, "invalid-device-identifier"),
            ("DELETE", "/v1/admin/devices/%2A", 200, nil),
            ("DELETE", "/v1/admin/devices/a%00b", 200, nil),
        ]
        for (method, path, status, reason) in withToken {
            cases.append(
                RawCase(
                    name: "\(method) \(path.prefix(80)) with the token", bytes: request(method, path, nil, headers: token),
                    admin: true,
                    statuses: [status], reason: reason))
        }
        // The admin token is no app key, and an app's key is its own app's only.
        let t = Int(Date().timeIntervalSince1970 * 1_000)
        let bodies = [
            (
                "/v1/conversions",
                #"{"device-identifier":"auth-d","advertised-item-identifier":\#(app),"conversion-type":"download","time":\#(t)}"#
            ),
            (
                "/v1/conversion-value-updates",
                #"{"device-identifier":"auth-d","advertised-item-identifier":\#(app),"time":\#(t),"fineConversionValue":3}"#
            ),
            ("/v1/activity", #"{"device-identifier":"auth-d","advertised-item-identifier":\#(app),"time":\#(t),"sessions":1}"#),
        ]
        let keys: [(String, String?, Int, String?)] = [
            ("no app key", nil, 401, "missing-app-key"), ("forged app key", "Bearer ak_forged", 401, "invalid-app-key"),
            ("admin token as app key", "Bearer \(admin)", 401, "invalid-app-key"),
            ("another app's key", "Bearer \(otherAppKey)", 403, "app-key-mismatch"),
            ("100 KB app key", "Bearer " + String(repeating: "k", count: 100_000), 400, nil),
        ]
        for (path, body) in bodies {
            for (name, value, status, reason) in keys {
                let headers = [json] + (value.map { [("Authorization", $0)] } ?? [])
                cases.append(
                    RawCase(
                        name: "POST \(path): \(name)", bytes: request("POST", path, Array(body.utf8), headers: headers),
                        statuses: status == 400 ? [0, 400] : [status], reason: reason))
            }
        }
        return cases
    }
}
