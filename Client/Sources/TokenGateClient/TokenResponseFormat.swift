/// Which body shape the gateway's provider speaks: TokenGate's default, or a legacy mapping its apps already parse.
///
/// The gateway's `response:` mapping and this value must agree. The legacy shapes in the wild:
///
/// ```swift
/// .tokenGate                                               // {"token", "expiresAt", "expiresIn", "refreshAfter", …}
/// .onDemandSample                                          // {"jwt", "expirationTimestamp": epoch ms}
/// .lastMileSample                                          // {"token", "expiration_timestamp_ms": epoch ms}
/// .journeySharing                                          // {"token", "expiresInSeconds": seconds from now}
/// .iOSSample(tokenKey: "TRIP_TOKEN_KEY", expiry: .secondsFromNow)   // {"TRIP_TOKEN_KEY", "TOKEN_EXPIRATION"}
/// ```
public struct TokenResponseFormat: Sendable, Hashable, CustomStringConvertible {
    /// What the number under ``expiryKey`` means.
    public enum Expiry: String, Sendable, Hashable {
        /// Absolute time, seconds since 1970 (the Swift SDK sample's reading of `TOKEN_EXPIRATION`).
        case epochSeconds = "epoch-seconds"
        /// Absolute time, milliseconds since 1970 (`expirationTimestamp`, `expiration_timestamp_ms`).
        case epochMilliseconds = "epoch-milliseconds"
        /// A lifetime in seconds counted from receipt (the Objective-C sample's reading; `expiresInSeconds`).
        case secondsFromNow = "seconds-from-now"
    }

    /// The key of the token string.
    public let tokenKey: String
    /// The key of the expiry number.
    public let expiryKey: String
    /// What the expiry number means.
    public let expiry: Expiry
    /// Whether this is TokenGate's own shape (``tokenGate``), which carries `expiresIn` and `refreshAfter`.
    public let isTokenGate: Bool

    private init(tokenKey: String, expiryKey: String, expiry: Expiry, isTokenGate: Bool) {
        self.tokenKey = tokenKey
        self.expiryKey = expiryKey
        self.expiry = expiry
        self.isTokenGate = isTokenGate
    }

    /// TokenGate's default body: `token`, `expiresIn` (preferred: immune to device clock skew), `expiresAt` and
    /// `refreshAfter` (epoch seconds).
    public static let tokenGate = TokenResponseFormat(
        tokenKey: "token", expiryKey: "expiresAt", expiry: .epochSeconds, isTokenGate: true)

    /// A legacy mapping: the token under `tokenKey`, its expiry under `expiryKey` with meaning `expiry`.
    public static func legacy(tokenKey: String, expiryKey: String, expiry: Expiry) -> TokenResponseFormat {
        TokenResponseFormat(tokenKey: tokenKey, expiryKey: expiryKey, expiry: expiry, isTokenGate: false)
    }

    /// Google's on-demand sample servers and apps: `{"jwt": …, "expirationTimestamp": <epoch ms>}`.
    public static let onDemandSample = legacy(
        tokenKey: "jwt", expiryKey: "expirationTimestamp", expiry: .epochMilliseconds)
    /// Google's last-mile delivery sample: `{"token": …, "expiration_timestamp_ms": <epoch ms>}`.
    public static let lastMileSample = legacy(
        tokenKey: "token", expiryKey: "expiration_timestamp_ms", expiry: .epochMilliseconds)
    /// JavaScript journey sharing: `{"token": …, "expiresInSeconds": <seconds from now>}`.
    public static let journeySharing = legacy(tokenKey: "token", expiryKey: "expiresInSeconds", expiry: .secondsFromNow)

    /// The iOS SDK samples: `{"TRIP_TOKEN_KEY" or "VEHICLE_TOKEN_KEY": …, "TOKEN_EXPIRATION": …}`. The Swift sample
    /// reads `TOKEN_EXPIRATION` as epoch seconds, the Objective-C one as seconds from now: say which your server sends.
    public static func iOSSample(tokenKey: String, expiry: Expiry) -> TokenResponseFormat {
        legacy(tokenKey: tokenKey, expiryKey: "TOKEN_EXPIRATION", expiry: expiry)
    }

    public var description: String {
        isTokenGate ? "tokengate" : "legacy(\(tokenKey), \(expiryKey): \(expiry.rawValue))"
    }
}
