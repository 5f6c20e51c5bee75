/// Something that yields Google OAuth access tokens with the cloud-platform scope: a service-account key file, a
/// gcloud user login, workload identity federation, impersonation, or the metadata server.
///
/// ```swift
/// let credentials = try ApplicationDefaultCredentials.resolve(
///     credentialsFile: nil, environment: ProcessInfo.processInfo.environment, endpoints: GoogleEndpoints(),
///     client: .shared, logger: logger)
/// logger.info("Google credentials: \(credentials.summary)")
/// let token = try await credentials.accessToken()
/// ```
package protocol GoogleCredentials: Sendable {
    /// What these are, for logs and check-config ("service account x@p.iam.gserviceaccount.com
    /// (GOOGLE_APPLICATION_CREDENTIALS /path)", "the metadata server at 169.254.169.254"...); never a secret.
    var summary: String { get }

    /// The project the API calls made with these credentials are billed to (the credentials file's
    /// `quota_project_id`), to be sent as `x-goog-user-project` on each, as Google's libraries do; `nil`: none is
    /// sent and the principal's own project is billed.
    var quotaProject: String? { get }

    /// A current access token with the cloud-platform scope: cached; fetched by ONE request when missing or with
    /// less than `refreshBefore` left, however many callers wait (single flight); a failed refresh while the old
    /// token is still valid returns the old one.
    func accessToken() async throws(GoogleAuthError) -> GoogleAccessToken
}
