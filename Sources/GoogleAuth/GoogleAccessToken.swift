/// An OAuth 2.0 access token for Google APIs, sent as `Authorization: Bearer <value>`.
///
/// ```swift
/// let token = try await credentials.accessToken()
/// request.headers.add(name: "Authorization", value: "Bearer \(token.value)")
/// ```
package struct GoogleAccessToken: Sendable, CustomStringConvertible {
    /// The bearer token itself: a secret, never logged.
    package let value: String
    /// When Google stops accepting it, in seconds since 1970.
    package let expiresAt: Int64
    /// How it was obtained, step by step, for operators (check-config --online): where a federated identity's
    /// credentials and subject token came from. `nil` when there is nothing to say beyond the credentials' summary.
    /// Never a secret.
    package var provenance: String?

    /// A token that expires at `expiresAt` (epoch seconds).
    package init(value: String, expiresAt: Int64, provenance: String? = nil) {
        self.value = value
        self.expiresAt = expiresAt
        self.provenance = provenance
    }

    /// The expiry only: the value is a secret.
    package var description: String { "GoogleAccessToken(redacted, expiresAt: \(expiresAt))" }
}
