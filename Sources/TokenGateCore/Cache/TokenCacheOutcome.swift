/// How ``TokenCache/value(for:fetch:)`` produced its value; the raw value is a stable metric label.
public enum TokenCacheOutcome: String, Sendable, Hashable, CaseIterable {
    /// Served from the cache without a fetch.
    case hit
    /// Served from the cache inside the refresh window while a background refresh runs (this call may have
    /// started it).
    case refreshingAhead = "refresh_ahead"
    /// Served from the cache inside the refresh window; the last background refresh failed and the next is
    /// held back by ``TokenCachePolicy/refreshRetryInterval``.
    case servedAfterRefreshFailure = "stale"
    /// The caller waited for a backend fetch, started by this call or shared with concurrent callers.
    case miss
}
