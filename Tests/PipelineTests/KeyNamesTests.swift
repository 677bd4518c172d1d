import Foundation
import PipelineCatalog
import ServiceRuntime
import Testing

/// Redis key names built from outside input: each record has one name, and erasure's SCAN patterns
/// find exactly the device's (checked with fnmatch, whose rules Redis's glob follows).
@Suite("Key names") struct KeyNamesTests {
    static let partition = Partitioning(count: 16).of(device: "any")

    static func idempotency(_ device: String, _ caller: String, _ key: String) -> String {
        DeviceKeys.idempotency(device: device, route: "impressions", caller: caller, key: key, in: partition)
    }

    /// Inputs that collided when ids went into the name raw (`:` separates components), then inputs
    /// the escaping itself must keep apart.
    static let ambiguousPairs: [((String, String, String), (String, String, String))] = [
        (("d:impressions:7", "7", "k"), ("d", "7", "impressions:7:k")),
        (("d", "kid=a:b", "c"), ("d", "kid=a", "b:c")),
        (("d", "kid=n", "%3A"), ("d", "kid=n", ":")),
        (("d%3Ax", "kid=n", "k"), ("d:x", "kid=n", "k")),
    ]

    @Test(arguments: ambiguousPairs)
    func idempotencyRecordsNeverShareAName(first: (String, String, String), second: (String, String, String)) {
        #expect(Self.idempotency(first.0, first.1, first.2) != Self.idempotency(second.0, second.1, second.2))
    }

    @Test(arguments: ["device-1", "a:b", "50%:x", "with*glob?[chars]\\"])
    func erasureFindsTheDevicesIdempotencyRecordsAndNoOthers(device: String) {
        let patterns = DeviceKeys.patterns(device: device, in: Self.partition)
        func matched(_ key: String) -> Bool { patterns.contains { fnmatch($0, key, 0) == 0 } }
        #expect(matched(Self.idempotency(device, "kid=n", "k:1")))
        #expect(matched(Self.idempotency(device, "42", "k")))
        #expect(!matched(Self.idempotency(device + "x", "42", "k")))
        #expect(!matched(Self.idempotency("x" + device, "42", "k")))
    }
}
