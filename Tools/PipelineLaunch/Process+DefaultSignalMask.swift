import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension Process {
    /// `run()` from a fresh thread with nothing blocked, so the child starts with a default signal mask.
    ///
    /// A child inherits the blocked-signal mask of the thread that spawns it, and swift-corelibs-foundation
    /// does not reset it. Swift concurrency's threads (libdispatch workers) block SIGTERM, SIGINT and
    /// friends, so a child spawned from an async test ignores SIGTERM: `terminate()` then does nothing
    /// and `waitUntilExit()` hangs. Use this for every child a test wants to stop or signal.
    public func runWithDefaultSignalMask() throws {
        let result = Mutex<Result<Void, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            var empty = sigset_t()
            sigemptyset(&empty)
            pthread_sigmask(SIG_SETMASK, &empty, nil)
            let outcome = Result { try self.run() }
            result.withLock { $0 = outcome }
            done.signal()
        }
        thread.start()
        done.wait()
        try result.withLock { $0! }.get()
    }
}
