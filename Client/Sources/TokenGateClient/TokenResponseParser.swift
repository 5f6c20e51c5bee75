internal import Foundation

/// Turns a 200 body into a ``FleetEngineToken`` whose deadlines are on the device's clock.
///
/// Expiry, in order of trust:
/// - TokenGate's shape: `now + expiresIn` (immune to device clock skew), else `expiresAt`. The JWT is not consulted:
///   the gateway is authoritative and `exp` is on the server's clock.
/// - A legacy shape: the body's expiry read with the configured meaning, unless it contradicts the token's own
///   `exp` claim (decoded, not verified). A body expiry already past on receipt, or later than `exp` by more than
///   ``skewTolerance``, is a unit or meaning mistake (`3600` read as epoch seconds, epoch seconds read as a
///   lifetime, milliseconds read as seconds): `exp` is used instead. Without a usable expiry either way the body
///   is an invalid response.
///
/// `refreshAfter` keeps the gateway's lead time before expiry (`expiresAt − refreshAfter`), else 10 minutes before
/// expiry; one already past on receipt is due at once, and `TokenProvider` paces the background fetches it causes
/// (at most one per `backgroundRetryInterval`, always before the refresh margin).
struct TokenResponseParser: Sendable {
    /// Fleet Engine tolerates about 10 minutes of clock skew; a larger disagreement is a mistake, not skew.
    static let skewTolerance: TimeInterval = 600
    /// Refresh lead time when the body gives none.
    static let defaultRefreshLead: TimeInterval = 600

    let format: TokenResponseFormat

    func parse(_ body: Data, for context: TokenContext, receivedAt now: Date) throws(TokenGateClientError)
        -> FleetEngineToken
    {
        guard let object = DecodedJSON.object(body) else {
            throw .invalidResponse("the body is not a JSON object")
        }
        guard let token = object[format.tokenKey]?.string, !token.isEmpty else {
            throw .invalidResponse("no token string under \"\(format.tokenKey)\"")
        }
        let expiresAt = try expiry(of: object, token: token, now: now)
        guard expiresAt > now else {
            throw .invalidResponse("the token had expired on receipt (expiry \(expiresAt))")
        }
        return FleetEngineToken(
            token: token, context: context, receivedAt: now, expiresAt: expiresAt,
            refreshAfter: refreshAfter(object, expiresAt: expiresAt, now: now))
    }

    private func expiry(of object: [String: DecodedJSON], token: String, now: Date) throws(TokenGateClientError) -> Date {
        if format.isTokenGate {
            if let expiresIn = object["expiresIn"]?.number { return now.addingTimeInterval(expiresIn) }
            if let expiresAt = object["expiresAt"]?.number { return Date(timeIntervalSince1970: expiresAt) }
            throw .invalidResponse("neither \"expiresIn\" nor \"expiresAt\" is a number")
        }
        let claimed = JWTClaims.expiry(ofToken: token)
        guard let body = object[format.expiryKey]?.number.map({ legacyExpiry($0, now: now) }) else {
            if let claimed { return claimed }
            throw .invalidResponse("no number under \"\(format.expiryKey)\" and no exp claim in the token")
        }
        guard let claimed else { return body }
        let contradicts = body <= now || body.timeIntervalSince(claimed) > Self.skewTolerance
        return contradicts ? claimed : body
    }

    private func legacyExpiry(_ value: Double, now: Date) -> Date {
        switch format.expiry {
        case .epochSeconds: Date(timeIntervalSince1970: value)
        case .epochMilliseconds: Date(timeIntervalSince1970: value / 1000)
        case .secondsFromNow: now.addingTimeInterval(value)
        }
    }

    private func refreshAfter(_ object: [String: DecodedJSON], expiresAt: Date, now: Date) -> Date {
        var refreshAfter = expiresAt.addingTimeInterval(-Self.defaultRefreshLead)
        if let serverRefresh = object["refreshAfter"]?.number {
            if let serverExpiry = object["expiresAt"]?.number, serverExpiry >= serverRefresh {
                // Keep the lead time, not the absolute instant: the device clock may be skewed.
                refreshAfter = expiresAt.addingTimeInterval(-(serverExpiry - serverRefresh))
            } else {
                refreshAfter = Date(timeIntervalSince1970: serverRefresh)
            }
        }
        // Already due (the gateway is refreshing this token behind it): due now; the provider paces the retries.
        return min(max(refreshAfter, now), expiresAt)
    }
}
