import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A TCP port on 127.0.0.1 that was free a moment ago, below the kernel's ephemeral range (Linux:
/// 32768–60999), never one this process handed out before (until the range wraps, after 7,768 ports).
///
/// Not port 0: the kernel picks that from the ephemeral range, where every outgoing connection takes
/// its local port, so any client socket of a test running alongside (an HTTP client, a Redis
/// connection, a load run) could take the port before the server binds it. And not at random: two
/// tests starting at once could draw the same port before either binds it (both seen in CI as
/// "Address already in use"). So the ports go in turn from a random start. A cluster node's bus port,
/// port + 10000, stays below the ephemeral range too.
public func freeLoopbackPort() throws -> Int {
    for _ in 0..<512 {
        let port = nextLoopbackPort.withLock { next in
            defer { next = next >= 22_767 ? 15_000 : next + 1 }
            return next
        }
        if let bound = try? bindLoopback(port: port) { return bound }
    }
    return try bindLoopback(port: 0)
}

private let nextLoopbackPort = Mutex(Int.random(in: 15_000...22_767))

/// Whether `port` on 127.0.0.1 can be bound right now (for a second port a server derives from its
/// first, like a cluster node's bus port at port + 10000).
public func loopbackPortIsFree(_ port: Int) -> Bool {
    guard (1...65_535).contains(port) else { return false }
    return (try? bindLoopback(port: port)) != nil
}

/// Binds `port` (0: any) on 127.0.0.1, closes it again and returns the port that was bound.
private func bindLoopback(port: Int) throws -> Int {
    #if canImport(Glibc)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    #else
        let descriptor = socket(AF_INET, SOCK_STREAM, 0)
    #endif
    guard descriptor >= 0 else { throw LaunchError("socket() failed: errno \(errno)") }
    defer { close(descriptor) }

    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let bound = withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard bound == 0 else { throw LaunchError("bind() failed: errno \(errno)") }

    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            getsockname(descriptor, $0, &length)
        }
    }
    guard named == 0 else { throw LaunchError("getsockname() failed: errno \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// Whether a server accepts TCP connections on 127.0.0.1:`port` right now (connects, then closes).
public func loopbackPortAccepts(_ port: Int) -> Bool {
    #if canImport(Glibc)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    #else
        let descriptor = socket(AF_INET, SOCK_STREAM, 0)
    #endif
    guard descriptor >= 0 else { return false }
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
}
