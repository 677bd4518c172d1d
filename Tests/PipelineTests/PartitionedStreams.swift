import PipelineCatalog
import RedisStreams
import ServiceRuntime
import TestSupport

// Reading a partitioned stream in tests: every partition of the default partitioning (what the test
// pipelines run with), as one stream.

let testPartitioning = Partitioning()

/// Every entry of every partition of `stream`, ordered by entry id (time, then sequence).
func streamRecords(_ stream: PartitionedName, on connection: RedisConnection) async throws -> [StreamRecord] {
    var records: [StreamRecord] = []
    for name in stream.all(testPartitioning) { records += try await streamRecords(name, on: connection) }
    let zero = StreamTrim.EntryID(milliseconds: 0, sequence: 0)
    return records.sorted { (StreamTrim.EntryID($0.id) ?? zero) < (StreamTrim.EntryID($1.id) ?? zero) }
}

/// XLEN summed over the partitions of `stream`.
func streamLength(_ stream: PartitionedName, on connection: RedisConnection) async throws -> Int {
    var total = 0
    for name in stream.all(testPartitioning) { total += try await streamLength(name, on: connection) }
    return total
}

/// Entries delivered to `group` and not acknowledged, summed over the partitions of `stream`.
func pendingCount(_ stream: PartitionedName, group: String, on connection: RedisConnection) async throws -> Int {
    let replies = try await connection.pipeline(stream.all(testPartitioning).map { RedisCommand("XPENDING", $0, group) })
    return replies.reduce(0) { $0 + Int($1.elements.first?.int ?? 0) }
}

/// Items waiting in every partition of `queue`.
func queueCount(_ queue: PartitionedQueue, on connection: RedisConnection) async throws -> Int {
    let replies = try await connection.pipeline(queue.all(testPartitioning).map { RedisCommand("ZCARD", $0.dueKey) })
    return replies.reduce(0) { $0 + Int($1.int ?? 0) }
}
