import RedisStreams

/// One of the pipeline's `P` partitions: every stream exists once per partition, and every key a stage
/// touches for an event lives in the partition of the event's device, behind the partition's hash tag,
/// so each stage transaction and each script stays in one Redis Cluster slot.
public struct Partition: Sendable, Hashable, CustomStringConvertible {
    /// 0 ..< P.
    public let index: Int
    /// The hash tag, braces included (`{p07}`, or `{p07.12}`): Redis Cluster hashes only what is
    /// between the braces. See `Partitioning.tag(index:count:)`.
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
        self.partitions = (0..<count).map { Partition(index: $0, tag: Self.tag(index: $0, count: count)) }
    }

    /// Partition `index`'s hash tag: `{pNN}` (zero-padded to the width of `count - 1`) when that hashes
    /// into the partition's share of the slots, the `index`-th of `count` equal ranges; else `{pNN.k}`
    /// with the smallest `k` that does. So the partitions spread over the slots as evenly as they can,
    /// and a cluster whose primaries hold equal slot ranges (what `redis-cli --cluster create` makes)
    /// serves equal numbers of partitions.
    public static func tag(index: Int, count: Int) -> String {
        let digits = String(index)
        let name = "p" + String(repeating: "0", count: max(0, String(count - 1).count - digits.count)) + digits
        let slots = ClusterSlot.count * index / count..<ClusterSlot.count * (index + 1) / count
        if count > ClusterSlot.count || slots.contains(ClusterSlot.slot(of: name)) { return "{\(name)}" }
        // A range of 16384/count slots is hit by one try in count/16384 on average: a few dozen at most.
        let salt = (1...).first { slots.contains(ClusterSlot.slot(of: "\(name).\($0)")) }!
        return "{\(name).\(salt)}"
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
