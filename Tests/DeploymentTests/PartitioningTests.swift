import ServiceRuntime
import Testing

/// The partition of a device is part of the storage format: every service, tool and version must agree.
@Suite("Partitions: stable by device, evenly spread, tagged for Redis Cluster")
struct PartitioningTests {
    static let golden: [(device: String, of16: Int, of3: Int)] = [
        ("device-1", 1, 2), ("device-2", 8, 2), ("A1B2C3D4-0000-4000-8000-000000000000", 13, 2), ("", 5, 2), ("ü", 10, 0),
    ]

    @Test(arguments: golden)
    func aDevicesPartitionIsFNV1aModuloTheCount(device: String, of16: Int, of3: Int) {
        #expect(Partitioning(count: 16).of(device: device).index == of16)
        #expect(Partitioning(count: 3).of(device: device).index == of3)
    }

    @Test func tagsArePaddedHashTags() {
        #expect(Partitioning(count: 16).partitions.map(\.tag).prefix(3) == ["{p00}", "{p01}", "{p02}"])
        #expect(Partitioning(count: 1).partitions.map(\.tag) == ["{p0}"])
        #expect(Partitioning(count: 100)[99].tag == "{p99}")
        #expect(Set(Partitioning(count: 1_024).partitions.map(\.tag)).count == 1_024)
    }

    @Test func devicesSpreadEvenly() {
        let partitioning = Partitioning()
        var counts = [Int](repeating: 0, count: partitioning.count)
        for index in 0..<16_000 { counts[partitioning.of(device: "device-\(index)").index] += 1 }
        #expect(counts.allSatisfy { (800...1_200).contains($0) }, "\(counts)")
    }

    @Test func partitionedNamesEndWithTheTag() {
        let partitioning = Partitioning(count: 4)
        #expect(StreamNames.events(partitioning[2]) == "events:{p2}")
        #expect(StreamNames.events.all(partitioning) == ["events:{p0}", "events:{p1}", "events:{p2}", "events:{p3}"])
        #expect(DelayedQueues.heldPostbacks[1](partitioning[3]).dueKey == "scheduler:held:w1:{p3}:due")
        #expect(DelayedQueues.heldPostbacks[1](partitioning[3]).target == "postbacks:{p3}")
        #expect(ConsumerGroups.verifier.attempts(partitioning[0]) == "verifier:attempts:{p0}")
        #expect(RegistryKeys.adNetworks == "registry:{registry}:ad-networks")
    }
}
