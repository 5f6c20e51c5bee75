/// One way of getting a fresh access token: one OAuth exchange (or two, for impersonation), no caching.
/// `CachedCredentials` puts the cache and the single flight in front of it.
protocol TokenFetcher: Sendable {
    /// What these credentials are, for logs; never a secret.
    var summary: String { get }
    /// How much longer than the usual bound a fetch may take: an executable source's own timeout.
    var fetchAllowance: Duration { get }
    /// A new token, every request of it finished before `deadline`.
    func fetch(deadline: ContinuousClock.Instant) async throws(GoogleAuthError) -> GoogleAccessToken
}

extension TokenFetcher {
    /// Only HTTP exchanges: the usual bound.
    var fetchAllowance: Duration { .zero }
}
