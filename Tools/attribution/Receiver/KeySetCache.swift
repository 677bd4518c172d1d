import AttributionCrypto
import Foundation
import Logging
import NIOCore
import Synchronization
import ToolSupport

/// The pipeline's published keys (`/.well-known/jwks.json`), fetched once and refetched when a
/// postback names a kid the cached set lacks: that is how a key rotation reaches the receiver.
actor KeySetCache {
    struct Unavailable: Error, CustomStringConvertible {
        var description: String
    }

    private let url: String
    private let client: ToolHTTPClient
    private let logger: Logger
    private var current: JWKSet? {
        didSet { snapshot.withLock { $0 = current } }
    }
    /// `current`, readable without a hop to the actor (the postback fast path).
    private let snapshot = Mutex<JWKSet?>(nil)
    private var lastFetch: ContinuousClock.Instant?
    /// One fetch at a time: concurrent postbacks with a new kid share it.
    private var fetching: Task<JWKSet, any Error>?

    /// Postbacks with made-up kids must not turn the receiver into a load generator for the JWKS host.
    static let minimumRefetchInterval: Duration = .seconds(1)
    static let maximumDocumentSize = 1 << 20

    init(url: String, client: ToolHTTPClient, logger: Logger) {
        self.url = url
        self.client = client
        self.logger = logger
    }

    /// The cached set if it holds `keyID`, else the set after one refetch. The caller's verification
    /// reports the kid as unknown if it is still missing. Within the refetch interval the request waits
    /// for the next allowed fetch rather than being refused: a receiver that fetched the set just before
    /// the dispatcher published its key must not turn the first postbacks into failed attempts.
    func keySet(containing keyID: String) async throws -> JWKSet {
        if let current, current.key(withID: keyID) != nil { return current }
        if let lastFetch {
            let wait = Self.minimumRefetchInterval - (ContinuousClock.now - lastFetch)
            if wait > .zero {
                try await Task.sleep(for: wait)
                // Another request may have fetched while this one waited: that set is as fresh as allowed.
                if let current, let fetched = self.lastFetch, ContinuousClock.now - fetched < Self.minimumRefetchInterval {
                    return current
                }
            }
        }
        return try await refresh()
    }

    /// The set as last fetched, if any, read at once (nil before the first fetch).
    nonisolated var cached: JWKSet? { snapshot.withLock { $0 } }

    /// For bodies that name no kid (SKAdNetwork): the cached set, fetched if there is none yet.
    func cachedOrFetched() async throws -> JWKSet {
        if let current { return current }
        return try await refresh()
    }

    /// A fresh set, unless one was fetched within the minimum interval.
    func refetched() async throws -> JWKSet {
        if let current, let lastFetch, ContinuousClock.now - lastFetch < Self.minimumRefetchInterval { return current }
        return try await refresh()
    }

    func refresh() async throws -> JWKSet {
        if let fetching { return try await fetching.value }
        let task = Task { [url, client] in try await Self.fetch(url: url, client: client) }
        fetching = task
        defer { fetching = nil }
        do {
            let keys = try await task.value
            current = keys
            lastFetch = .now
            logger.info(
                "Fetched key set",
                metadata: ["jwks.url": "\(url)", "jwks.kids": "\(keys.keys.compactMap(\.kid).joined(separator: ","))"])
            return keys
        } catch {
            lastFetch = .now
            logger.warning("Key set fetch failed", metadata: ["jwks.url": "\(url)", "error": "\(error)"])
            throw error
        }
    }

    private static func fetch(url: String, client: ToolHTTPClient) async throws -> JWKSet {
        let response: ToolHTTPClient.Response
        do {
            response = try await client.send(.GET, url, timeout: .seconds(10), maximumAnswerBytes: maximumDocumentSize)
        } catch {
            throw Unavailable(description: "cannot fetch \(url): \(error)")
        }
        guard (200..<300).contains(response.status) else {
            throw Unavailable(description: "\(url) answered \(response.status)")
        }
        guard let keys = try? JSONDecoder().decode(JWKSet.self, from: Data(response.body.readableBytesView)) else {
            throw Unavailable(description: "\(url) is not a JWK set ({\"keys\": [...]})")
        }
        return keys
    }
}
