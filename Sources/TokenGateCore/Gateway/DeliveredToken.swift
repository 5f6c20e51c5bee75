/// A token that passed verification and may be handed out: what the cache holds, and all it holds per context.
public struct DeliveredToken: Expiring, Equatable {
    /// The compact JWS. Never logged.
    public let compact: String
    /// The verified `iat`, epoch seconds.
    public let issuedAt: Int64
    /// The verified `exp`, epoch seconds.
    public let expiresAt: Int64
    /// Whether `compact` may go into a JSON string as it is: no quote, backslash or control character (true for
    /// every compact JWS, which is base64url and dots). Checked once here, not on every response.
    public let isJSONSafe: Bool

    /// Creates a delivered token.
    public init(compact: String, issuedAt: Int64, expiresAt: Int64) {
        self.compact = compact
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.isJSONSafe = compact.utf8.allSatisfy { $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }
    }
}

/// A context's key in the shared store: a typed pair, so no string join can make two contexts collide. (Each
/// provider has a cache of its own, keyed by context alone.)
struct TokenCacheKey: Hashable, Sendable {
    var provider: ProviderID
    var context: TokenContext
}

/// How a provider's token responses are written. The HTTP face decides the format (`TokenBodyFormat`); the service
/// makes one per provider when a generation is installed, so a cache entry holds only its token and a request
/// writes the body straight from it.
public protocol TokenResponseFormat: Sendable {
    /// The length in bytes of the body for `token`, issued for `context`, at `now` (epoch seconds).
    func byteCount(of token: DeliveredToken, context: TokenContext, now: Int64) -> Int
    /// Hands the body for `token`, issued for `context`, at `now` (epoch seconds) to `sink` in contiguous pieces, in
    /// order.
    func write(_ token: DeliveredToken, context: TokenContext, now: Int64, to sink: (UnsafeRawBufferPointer) -> Void)
}

/// Makes the response format of a provider.
public typealias TokenResponseFormatter = @Sendable (ProviderSettings) -> any TokenResponseFormat
