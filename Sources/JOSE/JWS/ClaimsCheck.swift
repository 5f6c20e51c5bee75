/// The registered-claim checks of `JWTVerifier.verify`, run after the signature.
struct ClaimsCheck {
    let claims: JSONObject
    let policy: ValidationPolicy
    let now: Int64

    func run() throws(JWTValidationError) {
        // Whole seconds, each rounded the way that makes the token less acceptable (see NumericDate).
        let expiration = try date("exp")
        let notBefore = try date("nbf")
        let issuedAt = try date("iat")
        let leeway = max(policy.leeway, 0)
        if let expiration {
            // Valid while now < exp (RFC 7519 section 4.1.4), stretched by the leeway.
            guard now < saturatingAdd(expiration.floor, leeway) else {
                throw JWTValidationError(.expired, "The token expired.")
            }
        } else if policy.requireExpiration {
            throw JWTValidationError(.missingClaim, "The token has no \"exp\" claim.")
        }
        if let notBefore, notBefore.ceiling > saturatingAdd(now, leeway) {
            throw JWTValidationError(.notYetValid, "The token is not valid yet (nbf).")
        }
        if let issuedAt, issuedAt.ceiling > saturatingAdd(now, leeway) {
            throw JWTValidationError(.issuedInFuture, "The token was issued in the future (iat).")
        }
        try checkIssuer()
        try checkAudience()
        if let maxLifetime = policy.maxLifetime {
            guard let expiration, let issuedAt else {
                throw JWTValidationError(.missingClaim, "The lifetime check needs both \"iat\" and \"exp\".")
            }
            // Both lie in 0...NumericDate.maximum, so the difference cannot overflow.
            guard expiration.floor - issuedAt.floor <= maxLifetime else {
                throw JWTValidationError(.lifetimeTooLong, "exp - iat is over \(maxLifetime) seconds.")
            }
        }
    }

    private func date(_ name: String) throws(JWTValidationError) -> NumericDate? {
        guard let value = claims[name] else { return nil }
        return try NumericDate(value, claim: name)
    }

    private func checkIssuer() throws(JWTValidationError) {
        guard let issuer = policy.issuer else { return }
        switch claims["iss"] {
        case .string(let value)?:
            // Code points, not canonical equivalence (RFC 7519 section 7.3).
            guard value.hasSameCodePoints(as: issuer) else {
                throw JWTValidationError(.wrongIssuer, "The issuer is not the expected one.")
            }
        case nil: throw JWTValidationError(.wrongIssuer, "The token has no \"iss\" claim.")
        default: throw JWTValidationError(.malformed, "The \"iss\" claim is not a string.")
        }
    }

    private func checkAudience() throws(JWTValidationError) {
        guard !policy.audiences.isEmpty else { return }
        let audiences: [String]
        switch claims["aud"] {
        case .string(let value)?: audiences = [value]
        case .array(let values)?:
            audiences = values.compactMap(\.stringValue)
            guard audiences.count == values.count else {
                throw JWTValidationError(.malformed, "The \"aud\" array holds a non-string.")
            }
        case nil: throw JWTValidationError(.wrongAudience, "The token has no \"aud\" claim.")
        default: throw JWTValidationError(.malformed, "The \"aud\" claim is neither a string nor an array.")
        }
        let accepted = audiences.contains { audience in
            policy.audiences.contains { audience.hasSameCodePoints(as: $0) }
        }
        guard accepted else {
            throw JWTValidationError(.wrongAudience, "No audience of the token is accepted here.")
        }
    }

    private func saturatingAdd(_ lhs: Int64, _ rhs: Int64) -> Int64 {
        let (sum, overflow) = lhs.addingReportingOverflow(rhs)
        return overflow ? (rhs > 0 ? .max : .min) : sum
    }
}
