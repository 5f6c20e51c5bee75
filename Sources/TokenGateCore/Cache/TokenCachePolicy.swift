/// How long cached tokens are handed out, when they are refreshed, and how many are kept.
///
/// The defaults follow what Fleet Engine's mobile SDKs expect of a token server: a returned token has at
/// least 5 minutes left, and a token is refreshed 10 minutes before it expires. The configuration layer validates
/// its input into this type; ``TokenCache`` treats invalid values as programmer errors.
package struct TokenCachePolicy: Sendable, Equatable {
    /// A token with less than this left is never handed out; a request waits for a fresh one. Default 5 minutes.
    package var minRemaining: Duration
    /// A token with less than this left is still handed out, and one background refresh starts. Default 10 minutes.
    /// Values below ``minRemaining`` disable refresh-ahead.
    package var refreshBefore: Duration
    /// The most entries kept; the least recently used entry is evicted beyond it. At least 1. Default 100 000.
    package var maxEntries: Int
    /// After a failed background refresh, the next one for that key waits at least this long (monotonic clock),
    /// while the cached token keeps being served. Default 30 seconds.
    package var refreshRetryInterval: Duration
    /// While the backend fails, a cached token with less than ``minRemaining`` but at least this much left is still
    /// served (outcome `stale`) rather than the backend's error: an app gets a token that works for a minute
    /// more instead of none. At most ``minRemaining`` (equal switches it off). Default 60 seconds.
    package var staleIfErrorFloor: Duration
    /// Each entry's refresh starts up to this much later than ``refreshBefore`` says (a random amount per entry,
    /// never past ``minRemaining``), so replicas that cached one token at the same moment do not all refresh it
    /// at once: the first one refreshes and the others find its token in the shared store. Default 0 (off); the
    /// gateway sets it when `sharedState:` is configured.
    package var refreshJitter: Duration

    /// A policy; every argument has the documented default.
    package init(
        minRemaining: Duration = .seconds(300),
        refreshBefore: Duration = .seconds(600),
        maxEntries: Int = 100_000,
        refreshRetryInterval: Duration = .seconds(30),
        refreshJitter: Duration = .zero,
        staleIfErrorFloor: Duration = .seconds(60)
    ) {
        self.staleIfErrorFloor = staleIfErrorFloor
        self.refreshJitter = refreshJitter
        self.minRemaining = minRemaining
        self.refreshBefore = refreshBefore
        self.maxEntries = maxEntries
        self.refreshRetryInterval = refreshRetryInterval
    }
}
