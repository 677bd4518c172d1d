import RedisStreams

/// One of the pipeline's `P` partitions: every stream exists once per partition, and every key a stage
/// touches for an event lives in the partition of the event's device, behind the partition's hash tag,
/// so each stage transaction and each script stays in one Redis Cluster slot.
public struct Partition: Sendable, Hashable, CustomStringConvertible {
    /// 0 ..< P.
    public let index: Int
    /// The hash tag, braces included (`{p07}`): Redis Cluster hashes only what is between the braces.
    public let tag: String

    public var description: String { tag }
}

/// The fixed set of partitions of a deployment (configuration `PARTITIONS`, recorded in Redis on first
/// start) and the rules that put things in them.
public struct Partitioning: Sendable, Equatable {
    /// How many partitions there are.
    public let count: Int
    /// Every partition, by index.
    public let partitions: [Partition]

    /// The default, 16: enough to spread over 16 primaries, few enough that an idle worker's round of
    /// reads stays cheap.
    public static let defaultCount = 16
    /// The most partitions a deployment may have.
    public static let maximumCount = 1_024

    public init(count: Int = Partitioning.defaultCount) {
        precondition((1...Self.maximumCount).contains(count), "partitions must be within 1...\(Self.maximumCount)")
        self.count = count
        let width = String(count - 1).count
        self.partitions = (0..<count).map { index in
            let digits = String(index)
            return Partition(index: index, tag: "{p\(String(repeating: "0", count: max(0, width - digits.count)))\(digits)}")
        }
    }

    public subscript(_ index: Int) -> Partition { partitions[index] }

    /// The partition of a device: FNV-1a (64-bit) of the identifier's UTF-8 bytes, modulo `count`.
    /// Stable across processes, versions and machines (Swift's `Hasher` is seeded per process).
    public func of(device identifier: String) -> Partition {
        partitions[Int(Self.fnv1a(identifier) % UInt64(count))]
    }

    /// The partition that holds a key not tied to a device (an impression's replay marker): the same hash.
    public func of(key: String) -> Partition { of(device: key) }

    static func fnv1a(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash
    }
}
