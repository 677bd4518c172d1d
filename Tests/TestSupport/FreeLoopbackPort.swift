#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A TCP port on 127.0.0.1 that was free a moment ago: bind port 0, read what the kernel chose, close.
///
/// Another process can take it before the caller binds it; callers that start servers retry.
public func freeLoopbackPort() throws -> Int {
    try bindLoopback(port: 0)
}

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
    guard descriptor >= 0 else { throw TestSupportError("socket() failed: errno \(errno)") }
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
    guard bound == 0 else { throw TestSupportError("bind() failed: errno \(errno)") }

    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            getsockname(descriptor, $0, &length)
        }
    }
    guard named == 0 else { throw TestSupportError("getsockname() failed: errno \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
}
