/// A token that passed verification and may be handed out: what the cache holds.
public struct DeliveredToken: Expiring, Equatable {
    /// The compact JWS. Never logged.
    public var compact: String
    /// The verified `iat`, epoch seconds.
    public var issuedAt: Int64
    /// The verified `exp`, epoch seconds.
    public var expiresAt: Int64

    /// Creates a delivered token.
    public init(compact: String, issuedAt: Int64, expiresAt: Int64) {
        self.compact = compact
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
    }
}

/// The cache key: a typed pair, so no string join can make two contexts collide.
struct TokenCacheKey: Hashable, Sendable {
    var provider: ProviderID
    var context: TokenContext
}

/// What the cache holds: the token and its response body, rendered once when it entered the cache.
struct CachedToken: Expiring {
    var token: DeliveredToken
    var body: RenderedTokenBody

    var expiresAt: Int64 { token.expiresAt }
}
