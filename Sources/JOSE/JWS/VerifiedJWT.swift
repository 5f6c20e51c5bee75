/// A token that passed `JWTVerifier.verify`.
public struct VerifiedJWT: Sendable {
    /// The protected header.
    public let header: JSONObject
    /// The claims; empty when `signatureOnly` was set and the payload is not a JSON object.
    public let claims: JSONObject
    /// The payload bytes exactly as signed.
    public let payload: [UInt8]
    /// The algorithm, equal to `key.algorithm`.
    public let algorithm: JWSAlgorithm
    /// The header `kid`, if any.
    public let keyID: String?
    /// The key that verified the signature.
    public let key: JWSKey

    /// The `exp` claim, if it is an integer.
    public var expiresAt: Int64? { claims["exp"]?.integerValue }

    /// The `iat` claim, if it is an integer.
    public var issuedAt: Int64? { claims["iat"]?.integerValue }
}
