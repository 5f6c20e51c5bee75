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

    /// The `exp` claim in whole seconds, a fraction rounded down (as the expiry check reads it); nil when absent or
    /// not a NumericDate (possible only under `signatureOnly`).
    public var expiresAt: Int64? { claims["exp"].flatMap { try? NumericDate($0, claim: "exp").floor } }

    /// The `iat` claim in whole seconds, a fraction rounded down; nil when absent or not a NumericDate.
    public var issuedAt: Int64? { claims["iat"].flatMap { try? NumericDate($0, claim: "iat").floor } }
}
