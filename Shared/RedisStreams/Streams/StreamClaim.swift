/// The result of one XAUTOCLAIM step over a group's pending entries.
public struct StreamClaim: Sendable, Equatable {
    /// Where the next step of the scan starts; `0-0` when the scan reached the end of the pending list.
    public var nextCursor: String
    /// Ids of the entries now owned by the claiming consumer.
    public var ids: [String]
    /// Pending ids whose entries were deleted from the stream; already acked and skipped.
    public var deletedIDs: [String]

    /// A claim result from its parts.
    public init(nextCursor: String, ids: [String], deletedIDs: [String]) {
        self.nextCursor = nextCursor
        self.ids = ids
        self.deletedIDs = deletedIDs
    }

    /// True when the scan has gone round the whole pending list.
    public var isScanComplete: Bool { self.nextCursor == "0-0" }
}
