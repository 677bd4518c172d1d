import AttributionModel
import RedisStreams

extension Rejection {
    /// The `rejected` entry recording this refusal: one shape for every stage that refuses an event
    /// (the verifier, attribution-winner), so the ledger and operators read one stream.
    public func entry(at time: Milliseconds) -> RedisCommand {
        StreamCommands.add(StreamNames.rejected, message: Envelope(time: time, body: .rejected(self)).encoded())
    }
}
