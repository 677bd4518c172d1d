import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The pipeline's random source for ids, delays, jitter and secrets: the kernel's CSPRNG (rules receive
/// a generator as a parameter, so tests inject a seeded one), fetched 4 KiB at a time (256 bytes a
/// system call) into one pool shared by every instance. `SystemRandomNumberGenerator` makes one
/// `getrandom` system call per draw: two per event id, a third of ingest's system calls per
/// single-event request (`perf trace`), and a system call per draw showed in the scheduler's profile.
/// The bytes are the kernel's own, each handed out once and then zeroed; only the system calls are
/// shared.
public struct KernelRandom: RandomNumberGenerator, Sendable {
    private static let pool = Mutex(Pool())

    private struct Pool {
        var words = [UInt64](repeating: 0, count: 512)
        /// The next unused word; `words.count` when all are used.
        var next = 512

        mutating func refill() {
            words.withUnsafeMutableBytes { bytes in
                // getentropy: getrandom(2) for at most 256 bytes a call, never short, never blocking once
                // the kernel's pool is seeded.
                for offset in stride(from: 0, to: bytes.count, by: 256) {
                    let status = getentropy(bytes.baseAddress! + offset, min(256, bytes.count - offset))
                    precondition(status == 0, "getentropy failed: errno \(errno)")
                }
            }
            next = 0
        }
    }

    public init() {}

    public mutating func next() -> UInt64 {
        Self.pool.withLock { pool in
            if pool.next == pool.words.count { pool.refill() }
            defer {
                pool.words[pool.next] = 0  // not kept once handed out
                pool.next += 1
            }
            return pool.words[pool.next]
        }
    }
}
