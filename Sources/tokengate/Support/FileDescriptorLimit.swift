#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The process's open-file limit (`RLIMIT_NOFILE`). `serve` raises the soft limit to the hard one at start, as
/// Go's runtime and nginx's `worker_rlimit_nofile` do: every connection costs a descriptor, and the common soft
/// default of 1024 would refuse connections long before `server.maxConnections`.
enum FileDescriptorLimit {
    /// Raises the soft limit to the hard limit; returns the soft limit in force afterwards and the hard one.
    static func raiseToHardLimit() -> (soft: UInt64, hard: UInt64)? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return (UInt64(limit.rlim_cur), UInt64(limit.rlim_max))
    }
}
