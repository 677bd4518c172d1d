import AttributionModel
import Foundation
import PipelineCatalog
import RedisStreams
import ServiceRuntime
import TestSupport
import Testing

extension PipelineSuites {
    /// Impressions signed by an independent implementation (Python's `cryptography`, as an ad network's
    /// own ad server might) are accepted end to end: key registered as the PEM Python wrote, JWS built by
    /// Python, verified by the pipeline.
    @Suite("Impressions signed by Python's cryptography", .serialized)
    struct IndependentSignerTests {
        let http = HTTPTestClient()

        static let script = #"""
            import base64, json, sys, time, uuid
            from cryptography.hazmat.primitives import hashes, serialization
            from cryptography.hazmat.primitives.asymmetric import ec
            from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

            network, advertised, publisher, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
            key = ec.generate_private_key(ec.SECP256R1())
            b64 = lambda data: base64.urlsafe_b64encode(data).rstrip(b"=").decode()
            impressions = []
            for n in range(count):
                header = b64(json.dumps({"alg": "ES256", "kid": network}, separators=(",", ":")).encode())
                payload = b64(json.dumps({
                    "impression-identifier": str(uuid.uuid4()).upper(), "ad-network-identifier": network,
                    "advertised-item-identifier": advertised, "publisher-item-identifier": publisher,
                    "source-identifier": 1000 + n, "timestamp": int(time.time() * 1000),
                    "impression-type": "app-impression", "eligible-for-re-engagement": n % 2 == 0,
                }).encode())
                der = key.sign(f"{header}.{payload}".encode(), ec.ECDSA(hashes.SHA256()))
                r, s = decode_dss_signature(der)
                impressions.append(f"{header}.{payload}.{b64(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}")
            pem = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
            print(json.dumps({"public-key": pem, "impressions": impressions}))
            """#

        struct Signed: Decodable {
            let publicKey: String
            let impressions: [String]
            enum CodingKeys: String, CodingKey {
                case publicKey = "public-key"
                case impressions
            }
        }

        /// Runs the script; fails (never skips) when python3 or `cryptography` is missing.
        static func sign(network: String, advertised: ItemIdentifier, publisher: ItemIdentifier, count: Int) throws -> Signed {
            let data = try Python.run(script, arguments: [network, String(advertised), String(publisher), String(count)])
            return try JSONDecoder().decode(Signed.self, from: data)
        }

        @Test func pythonSignedImpressionsAreVerified() async throws {
            let network = "python.adattributionkit"
            let advertised: ItemIdentifier = 55
            let publisher: ItemIdentifier = 66
            let signed = try Self.sign(network: network, advertised: advertised, publisher: publisher, count: 20)
            let redis = try await RedisServer.start()
            defer { redis.stop() }
            let pipeline = try PipelineProcesses(redis: redis, timeScale: 1, inProcess: true)
            defer { pipeline.stop() }
            #expect(try await http.waitUntilUp("\(pipeline.ingestURL)/health"), "ingest starts\n\(pipeline.logs())")
            try await pipeline.registerCampaign(
                network: network, publicKeyPEM: signed.publicKey, publisher: publisher, app: advertised, http: http)
            for (n, jws) in signed.impressions.enumerated() {
                let now = Milliseconds(Date().timeIntervalSince1970 * 1000)
                let reply = try await http.send(
                    "POST", "\(pipeline.ingestURL)/v1/impressions",
                    json: [
                        "device-identifier": "device-\(n)", "impression": jws,
                        "interaction": ["type": "click", "time": now, "loaded-at": now - 500],
                    ])
                #expect(reply.status == 202)
            }
            let connection = redis.connect()
            let done = try await eventually(timeout: .seconds(15)) {
                try await streamLength(StreamNames.verified, on: connection) + streamLength(StreamNames.rejected, on: connection)
                    >= signed.impressions.count
            }
            #expect(done, "\(pipeline.logs())")
            #expect(try await streamLength(StreamNames.verified, on: connection) == signed.impressions.count)
            let rejected = try await streamRecords(StreamNames.rejected, on: connection).compactMap(\.message)
            #expect(rejected.isEmpty, "refused: \(rejected.prefix(3))")
        }
    }
}
