/// How ``TokenCache/value(for:fetch:)`` produced its value; the raw value is a stable metric label.
public enum TokenCacheOutcome: String, Sendable, Hashable, CaseIterable {
    /// Served from the cache without a fetch.
    case hit
    /// Served from the cache inside the refresh window while a background refresh runs (this call may have
    /// started it).
    case refreshingAhead = "refreshing_ahead"
    /// Served from the cache inside the refresh window; the last background refresh failed and the next is
    /// held back by ``TokenCachePolicy/refreshRetryInterval``.
    case servedAfterRefreshFailure = "served_after_refresh_failure"
    /// The caller waited for a backend fetch, started by this call or shared with concurrent callers.
    case miss
}
