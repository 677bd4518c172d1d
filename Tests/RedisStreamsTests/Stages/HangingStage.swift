import RedisStreams

/// A stage that takes a batch and hangs until its task is cancelled: a consumer stopped or killed mid-batch.
struct HangingStage: StreamStage {
    let inner: CopyStage
    let entered: AsyncStream<Int>.Continuation

    func reads(for batch: [StreamEntry]) -> StageReads { self.inner.reads(for: batch) }

    func decide(_ batch: [StreamEntry], state: [RedisReply]) async -> [StageOutcome] {
        self.entered.yield(batch.count)
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(10))
        }
        // Stopped: a graceful stop commits these; a crash (connection gone first) cannot.
        return await self.inner.decide(batch, state: state)
    }
}
