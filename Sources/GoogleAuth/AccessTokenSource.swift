/// One way of getting a fresh access token: one OAuth exchange (or two, for impersonation), no caching.
/// `CachedCredentials` puts the cache and the single flight in front of it.
protocol AccessTokenSource: Sendable {
    /// What these credentials are, for logs; never a secret.
    var summary: String { get }
    /// The project billed for the API calls made with these tokens (a file's `quota_project_id`), which Google's
    /// libraries send as `x-goog-user-project`; `nil`: the project of the principal, Google's default.
    var quotaProject: String? { get }
    /// How much longer than the usual bound a fetch may take: an executable source's own timeout.
    var fetchAllowance: Duration { get }
    /// A new token, every request of it finished before `deadline`.
    func fetch(deadline: ContinuousClock.Instant) async throws(GoogleAuthError) -> GoogleAccessToken
}

extension AccessTokenSource {
    /// Only HTTP exchanges: the usual bound.
    var fetchAllowance: Duration { .zero }
}
