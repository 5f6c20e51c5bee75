public import JOSE

/// The Fleet Engine token rules that every TokenGate token obeys: RS256, `iss` and `sub` the signing service
/// account, Fleet Engine's audience, at most an hour of life, and exactly one `authorization` claim for its context.
public enum FleetEngineClaims {
    /// Fleet Engine's audience. The trailing slash is part of the value.
    public static let defaultAudience = "https://fleetengine.googleapis.com/"
    /// Fleet Engine rejects a token whose `exp` is more than one hour past `iat`.
    public static let maxLifetime: Int64 = 3600

    /// The claims of a token for `context`, issued by `serviceAccount` at `issuedAt` for `lifetime` seconds.
    ///
    /// `iss` and `sub` are both the signing service account's email; `lifetime` must not exceed one hour.
    public static func claims(
        serviceAccount: String,
        audience: String,
        context: TokenContext,
        issuedAt: Int64,
        lifetime: Int64
    ) -> JSONObject {
        precondition((1...maxLifetime).contains(lifetime), "lifetime is validated when the configuration loads")
        var claims = JSONObject()
        claims["iss"] = .string(serviceAccount)
        claims["sub"] = .string(serviceAccount)
        claims["aud"] = .string(audience)
        claims["iat"] = .integer(issuedAt)
        claims["exp"] = .integer(issuedAt + lifetime)
        claims["authorization"] = .object(context.authorizationClaim)
        return claims
    }

    /// The `configured` lifetime of a token issued at `issuedAt`, cut so that `exp` is at most `notAfter` (when
    /// given); never below one second.
    public static func lifetime(_ configured: Int64, issuedAt: Int64, notAfter: Int64?) -> Int64 {
        guard let notAfter else { return configured }
        let (untilBound, overflow) = notAfter.subtractingReportingOverflow(issuedAt)
        return overflow ? configured : max(1, min(configured, untilBound))
    }

    /// Checks that verified `claims` carry exactly the `authorization` claim for `context` and a consistent
    /// issuer, so a token for another trip, an unasked-for wildcard or a token of another type is never handed out.
    package static func checkScope(of claims: JSONObject, for context: TokenContext) throws(TokenRejection) {
        guard case .string(let issuer)? = claims["iss"], case .string(let subject)? = claims["sub"], issuer == subject
        else {
            throw TokenRejection(.wrongIssuer, "iss and sub must both name the signing service account")
        }
        guard case .object(let authorization)? = claims["authorization"] else {
            throw TokenRejection(.wrongContext, "the token has no authorization claim object")
        }
        // Said apart from a plain mismatch: a `*` where the context has none is the worst thing a backend can send.
        if !context.hasWildcard, authorization.contains(where: { Self.isWildcard($0.value) }) {
            throw TokenRejection(.wildcardClaim, "a token for \(context.tokenType) \(context) must not carry a '*' claim")
        }
        guard isExactly(.object(authorization), .object(context.authorizationClaim)) else {
            throw TokenRejection(
                .wrongContext,
                "the authorization claim \(Sanitized.quote(String(decoding: JSON.serialize(.object(authorization)), as: UTF8.self))) "
                    + "is not the one for \(context.tokenType) \(context)"
            )
        }
    }

    /// Whether `actual` is `expected` with every string the same UTF-8. Swift's `==` on strings is canonical
    /// equivalence: a claim spelling the trip's `é` decomposed would pass it, and names another trip at Fleet Engine.
    private static func isExactly(_ actual: JSONValue, _ expected: JSONValue) -> Bool {
        switch (actual, expected) {
        case (.string(let actual), .string(let expected)):
            return actual.utf8.elementsEqual(expected.utf8)
        case (.array(let actual), .array(let expected)):
            return actual.count == expected.count && zip(actual, expected).allSatisfy { isExactly($0, $1) }
        case (.object(let actual), .object(let expected)):
            return actual.count == expected.count
                && expected.allSatisfy { key, value in actual[key].map { isExactly($0, value) } ?? false }
        default:
            return actual == expected
        }
    }

    private static func isWildcard(_ value: JSONValue) -> Bool {
        switch value {
        case .string(let text): text == "*"
        case .array(let items): items.contains(.string("*"))
        default: false
        }
    }
}
