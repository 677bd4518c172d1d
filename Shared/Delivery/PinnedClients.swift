import AsyncHTTPClient
import AttributionModel
import Synchronization

/// HTTP clients that connect a host name to the address the destination check approved, and to no
/// other: each is configured with AsyncHTTPClient's `dnsOverride` (host → address), which keeps the
/// name for the Host header and TLS SNI and certificate checks, so a DNS answer that changes between
/// the check and the connection (rebinding) cannot move the POST. One client per host, replaced when
/// the checked address changes; the replaced one is shut down once its requests have had their time.
public final class PinnedClients: Sendable {
    private let configuration: HTTPClient.Configuration
    /// How long a replaced client may still be finishing requests (the delivery timeout and a margin).
    private let drain: Duration
    private let clients = Mutex<[String: (address: IPAddress, client: HTTPClient)]>([:])
    /// Bounds the clients kept: past it, the oldest are shut down (they are recreated when needed).
    private let capacity: Int

    public init(configuration: HTTPClient.Configuration, drain: Duration, capacity: Int = 256) {
        self.configuration = configuration
        self.drain = drain
        self.capacity = capacity
    }

    /// The client for `host` connecting to `address`.
    public func client(for host: String, address: IPAddress) -> HTTPClient {
        var retired: [HTTPClient] = []
        let client = clients.withLock { clients -> HTTPClient in
            if let current = clients[host], current.address == address { return current.client }
            var configuration = self.configuration
            configuration.dnsOverride = [host: address.description]
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            if let old = clients[host] { retired.append(old.client) }
            if clients.count >= capacity {
                retired += clients.values.map(\.client)
                clients.removeAll()
            }
            clients[host] = (address, client)
            return client
        }
        for old in retired {
            Task { [drain] in
                try? await Task.sleep(for: drain)
                try? await old.shutdown()
            }
        }
        return client
    }

    /// Shuts every client down (at exit).
    public func shutdown() async {
        let all = clients.withLock { clients in
            defer { clients.removeAll() }
            return clients.values.map(\.client)
        }
        for client in all { try? await client.shutdown() }
    }
}
