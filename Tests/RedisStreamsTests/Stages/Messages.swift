import RedisStreams

/// Appends text messages to a stream in one pipeline; returns their entry ids.
func append(_ messages: [String], to stream: String, on connection: RedisConnection) async throws -> [String] {
    let replies = try await connection.pipeline(messages.map { StreamCommands.add(stream, message: Array($0.utf8)) })
    return replies.compactMap(\.string)
}

/// `m0000`, `m0001`, ...: distinct, sortable message texts.
func numberedMessages(_ count: Int) -> [String] {
    (0..<count).map { "m" + String(repeating: "0", count: max(0, 4 - String($0).count)) + String($0) }
}
