#if canImport(CJemalloc)
    import CJemalloc
#endif

/// The processes' memory allocator on Linux: jemalloc, linked into every executable that uses this
/// module (elsewhere the system's, and both properties are nil).
///
/// Why: Swift allocates and frees a small object for nearly every array, string and closure it builds,
/// and with glibc's allocator that churn (`malloc`, `_int_free`, `malloc_consolidate`) was about a
/// fifth of the scheduler's and the attribution-winner's CPU in the all-five campaign; with jemalloc
/// it is about 5 % (measurements in docs/architecture.md, "The consumer loop"). Debian builds jemalloc
/// without a symbol prefix, so linking it replaces `malloc` and `free` for the whole process, the
/// Swift runtime's and the C libraries' included.
public enum Allocator {
    /// jemalloc's version ("5.3.0-0-g…"), or nil when its control call fails.
    public static var version: String? {
        #if canImport(CJemalloc)
            var text: UnsafePointer<CChar>?
            var size = MemoryLayout<UnsafePointer<CChar>?>.size
            guard mallctl("version", &text, &size, nil, 0) == 0, let text else { return nil }
            return String(cString: text)
        #else
            return nil
        #endif
    }

    /// Bytes this thread has allocated through jemalloc so far: grows with every `malloc` once jemalloc
    /// is the process's allocator, and stays put if some other `malloc` were bound first.
    public static var threadAllocatedBytes: UInt64? {
        #if canImport(CJemalloc)
            var bytes: UInt64 = 0
            var size = MemoryLayout<UInt64>.size
            return mallctl("thread.allocated", &bytes, &size, nil, 0) == 0 ? bytes : nil
        #else
            return nil
        #endif
    }
}
