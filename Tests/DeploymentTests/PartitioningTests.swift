import PipelineCatalog
import RedisStreams
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

    /// The same list scripts/harness.py computes (`partition_tag`): the scripts read these names.
    @Test func tagsSpreadThePartitionsOverTheSlots() {
        #expect(
            Partitioning(count: 16).partitions.map(\.tag) == [
                "{p00.62}", "{p01.61}", "{p02}", "{p03.3}", "{p04.12}", "{p05.11}", "{p06.21}", "{p07.22}", "{p08.42}",
                "{p09.41}", "{p10.62}", "{p11.61}", "{p12.43}", "{p13.40}", "{p14.12}", "{p15.11}",
            ])
        #expect(Partitioning(count: 3).partitions.map(\.tag) == ["{p0.1}", "{p1.4}", "{p2.4}"])
        #expect(Partitioning(count: 1).partitions.map(\.tag) == ["{p0}"])
        for count in [1, 3, 16, 100, 1_024] {
            let partitioning = Partitioning(count: count)
            #expect(Set(partitioning.partitions.map(\.tag)).count == count)
            for partition in partitioning.partitions {
                let share = ClusterSlot.count * partition.index / count..<ClusterSlot.count * (partition.index + 1) / count
                #expect(share.contains(ClusterSlot.slot(of: partition.tag)), "\(partition.tag) in its share of the slots")
            }
        }
    }

    @Test func devicesSpreadEvenly() {
        let partitioning = Partitioning()
        var counts = [Int](repeating: 0, count: partitioning.count)
        for index in 0..<16_000 { counts[partitioning.of(device: "device-\(index)").index] += 1 }
        #expect(counts.allSatisfy { (800...1_200).contains($0) }, "\(counts)")
    }

    @Test func partitionedNamesEndWithTheTag() {
        let partitioning = Partitioning(count: 4)
        let tags = partitioning.partitions.map(\.tag)
        #expect(StreamNames.events(partitioning[2]) == "events:\(tags[2])")
        #expect(StreamNames.events.all(partitioning) == tags.map { "events:\($0)" })
        #expect(DelayedQueues.heldPostbacks[1](partitioning[3]).dueKey == "scheduler:held:w1:\(tags[3]):due")
        #expect(DelayedQueues.heldPostbacks[1](partitioning[3]).target == "postbacks:\(tags[3])")
        #expect(ConsumerGroups.verifier.attempts(partitioning[0]) == "verifier:attempts:\(tags[0])")
        #expect(RegistryKeys.adNetworks == "registry:{registry}:ad-networks")
    }
}
