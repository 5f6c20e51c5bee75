import ServiceLifecycle
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Gives back to the system the memory a burst of connections left behind. Each connection's buffers are freed when
/// it closes, but glibc's allocator keeps freed memory in its arenas (one per event loop thread): after 10,000
/// connections came and went, the process stayed at 200 MB where it had started at 45. Every few seconds, once enough
/// connections have closed since the last time, `malloc_trim` returns what is free.
package struct HeapTrim: Service {
    /// Connections closed since the last trim, by every listener of the process.
    static let closedSinceTrim = Atomic<Int>(0)
    /// How many closed connections are worth a trim: a trim walks the heap, a few milliseconds for hundreds of MB.
    static let closedPerTrim = 500
    /// How often it looks.
    let interval: Duration

    package init(interval: Duration = .seconds(5)) { self.interval = interval }

    /// glibc's `malloc_trim`, found at run time (Swift's Glibc module leaves out `malloc.h`); nil elsewhere.
    static let mallocTrim: (@convention(c) (Int) -> Int32)? = {
        #if canImport(Glibc)
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return nil }
            return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
        #else
            return nil
        #endif
    }()

    /// One connection closed.
    static func connectionClosed() { closedSinceTrim.add(1, ordering: .relaxed) }

    package func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do { try await Task.sleep(for: interval) } catch { return }
                guard Self.closedSinceTrim.load(ordering: .relaxed) >= Self.closedPerTrim else { continue }
                Self.closedSinceTrim.store(0, ordering: .relaxed)
                _ = Self.mallocTrim?(0)
            }
        }
    }
}
