/// How ``TokenCache/value(for:notAfter:fetch:)`` produced its value; the raw value is a stable metric label.
package enum TokenCacheOutcome: String, Sendable, Hashable, CaseIterable {
    /// Served from the cache without a fetch.
    case hit
    /// Served from the cache inside the refresh window while a background refresh runs (this call may have
    /// started it).
    case refreshingAhead = "refresh_ahead"
    /// Served from the cache because the backend fails: inside the refresh window after a failed background
    /// refresh (the next held back by ``TokenCachePolicy/refreshRetryInterval``), or below
    /// ``TokenCachePolicy/minRemaining`` but above ``TokenCachePolicy/staleIfErrorFloor`` after a failed fetch.
    case servedAfterRefreshFailure = "stale"
    /// The caller waited for a backend fetch, started by this call or shared with concurrent callers.
    case miss
}
