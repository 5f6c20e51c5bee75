/// An OAuth 2.0 access token for Google APIs, sent as `Authorization: Bearer <value>`.
///
/// ```swift
/// let token = try await credentials.accessToken()
/// request.headers.add(name: "Authorization", value: "Bearer \(token.value)")
/// ```
public struct GoogleAccessToken: Sendable, CustomStringConvertible {
    /// The bearer token itself: a secret, never logged.
    public let value: String
    /// When Google stops accepting it, in seconds since 1970.
    public let expiresAt: Int64

    /// A token that expires at `expiresAt` (epoch seconds).
    public init(value: String, expiresAt: Int64) {
        self.value = value
        self.expiresAt = expiresAt
    }

    /// The expiry only: the value is a secret.
    public var description: String { "GoogleAccessToken(redacted, expiresAt: \(expiresAt))" }
}
