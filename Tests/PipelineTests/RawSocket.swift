import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A plain TCP connection for what an HTTP client library will not do: send a request a byte at a
/// time, or nothing at all, and watch what the server does.
final class RawSocket {
    private let descriptor: Int32

    init?(port: Int) {
        #if canImport(Glibc)
            let socketType = Int32(SOCK_STREAM.rawValue)
        #else
            let socketType = SOCK_STREAM
        #endif
        descriptor = socket(AF_INET, socketType, 0)
        guard descriptor >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(descriptor)
            return nil
        }
    }

    deinit { close(descriptor) }

    @discardableResult
    func transmit(_ text: String) -> Bool { transmit(bytes: Array(text.utf8)) }

    /// Sends every byte, or fewer when the server closes first (a refusal mid-request).
    @discardableResult
    func transmit(bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes {
                send(descriptor, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL))
            }
            if count <= 0 { return false }
            sent += count
        }
        return true
    }

    /// What the server sends within `timeout`, and whether it closed the connection (then sooner); with
    /// `until`, sooner as soon as what arrived satisfies it.
    func read(timeout: Duration, until done: (String) -> Bool = { _ in false }) -> (text: String, closed: Bool) {
        let deadline = ContinuousClock.now + timeout
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while ContinuousClock.now < deadline, !done(String(decoding: received, as: UTF8.self)) {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 20) > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return (String(decoding: received, as: UTF8.self), true) }
            received += buffer[..<count]
        }
        return (String(decoding: received, as: UTF8.self), false)
    }
}
