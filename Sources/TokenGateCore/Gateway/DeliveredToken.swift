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
    var body: any TokenResponseBody

    var expiresAt: Int64 { token.expiresAt }
}

/// A token's response body, rendered once when the token enters the cache, so that a cache hit only copies bytes.
/// The HTTP face decides the format (`RenderedTokenBody`); the core only keeps it beside the token.
public protocol TokenResponseBody: Sendable {
    /// The body's length in bytes at `now` (epoch seconds).
    func byteCount(now: Int64) -> Int
    /// Hands the body at `now` (epoch seconds) to `sink` in a few contiguous pieces, in order.
    func write(now: Int64, to sink: (UnsafeRawBufferPointer) -> Void)
}

/// Renders the response body of a token served for a context by a provider.
public typealias TokenBodyRenderer = @Sendable (DeliveredToken, TokenContext, ProviderSettings) -> any TokenResponseBody
