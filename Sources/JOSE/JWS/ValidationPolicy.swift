/// What `JWTVerifier.verify` demands beyond a valid signature. Times are epoch seconds.
public struct ValidationPolicy: Sendable {
    /// Tokens longer than this (UTF-8 bytes) are refused before any decoding. Default 16 KiB.
    public var maxTokenBytes: Int = 16 * 1024
    /// The allow-list of header `alg` values; `nil` means the key binding alone decides (a token whose `alg`
    /// differs from its key's algorithm is still refused, as `key_alg_mismatch`).
    public var allowedAlgorithms: Set<JWSAlgorithm>? = nil
    /// Clock skew tolerated on `exp`, `nbf` and `iat`, in seconds. Default 60.
    public var leeway: Int64 = 60
    /// Whether `exp` must be present. Default true.
    public var requireExpiration: Bool = true
    /// The required `iss`, or nil for any.
    public var issuer: String? = nil
    /// Accepted audiences (any-of against `aud`, a string or an array); empty: `aud` not checked.
    public var audiences: [String] = []
    /// The longest accepted `exp - iat` in seconds; when set, both claims are required.
    public var maxLifetime: Int64? = nil
    /// Whether the header must carry a `kid`.
    public var requireKeyID: Bool = false
    /// The required header `typ` (compared ASCII case-insensitively), or nil for any.
    public var requiredType: String? = nil
    /// Check only header and signature; the payload may be any bytes.
    public var signatureOnly: Bool = false

    /// The defaults above.
    public init() {}
}
