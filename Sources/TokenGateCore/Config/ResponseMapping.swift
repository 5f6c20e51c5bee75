/// How a provider's token response body is shaped, so apps that already parse an existing token server's
/// response keep working unchanged (Google's samples' shapes: `jwt`/`expirationTimestamp` in ms,
/// `TOKEN_EXPIRATION` in seconds, `token`/`expiresInSeconds`, …).
package struct ResponseMapping: Sendable, Equatable {
    /// What the expiry value means.
    package enum ExpiryFormat: String, Sendable, CaseIterable {
        /// Absolute time, epoch seconds.
        case epochSeconds = "epoch-seconds"
        /// Absolute time, epoch milliseconds.
        case epochMilliseconds = "epoch-milliseconds"
        /// Seconds from now.
        case secondsFromNow = "seconds-from-now"

        /// The value for a token expiring at `expiresAt` (epoch seconds), seen at `now`.
        package func value(expiresAt: Int64, now: Int64) -> Int64 {
            switch self {
            case .epochSeconds: expiresAt
            case .epochMilliseconds: expiresAt * 1000
            case .secondsFromNow: max(0, expiresAt - now)
            }
        }
    }

    /// The member that holds the token.
    package var tokenKey: String
    /// The member that holds the expiry.
    package var expiryKey: String
    /// What the expiry means.
    package var expiryFormat: ExpiryFormat

    /// Creates a mapping.
    package init(tokenKey: String, expiryKey: String, expiryFormat: ExpiryFormat) {
        self.tokenKey = tokenKey
        self.expiryKey = expiryKey
        self.expiryFormat = expiryFormat
    }

    static func parse(_ node: ConfigNode) throws -> ResponseMapping {
        let mapping = try node.mapping(allowedKeys: ["tokenKey", "expiryKey", "expiryFormat"])
        let formatNode = try mapping.required("expiryFormat")
        let formatText = try formatNode.string()
        guard let format = ExpiryFormat(rawValue: formatText) else {
            throw formatNode.error(
                "unknown expiry format '\(formatText)'; expected one of: \(ExpiryFormat.allCases.map(\.rawValue).joined(separator: ", "))"
            )
        }
        let tokenKey = try mapping.required("tokenKey").nonEmptyString()
        let expiryKeyNode = try mapping.required("expiryKey")
        let expiryKey = try expiryKeyNode.nonEmptyString()
        guard tokenKey != expiryKey else { throw expiryKeyNode.error("must differ from tokenKey") }
        return ResponseMapping(tokenKey: tokenKey, expiryKey: expiryKey, expiryFormat: format)
    }
}
