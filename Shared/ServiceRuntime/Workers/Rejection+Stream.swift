import AttributionModel
import PipelineCatalog
import RedisStreams

extension Rejection {
    /// The `rejected` entry recording this refusal: one shape for every stage that refuses an event
    /// (the verifier, attribution-winner), so the ledger and operators read one stream (per partition).
    public func entry(at time: Milliseconds, in partition: Partition) throws -> RedisCommand {
        StreamCommands.add(StreamNames.rejected(partition), message: try Envelope(time: time, body: .rejected(self)).encoded())
    }
}
