public import Foundation

/// A Fleet Engine token as cached by ``TokenProvider``, with its deadlines on this device's clock.
public struct FleetEngineToken: Sendable, Hashable, CustomStringConvertible {
    /// The compact JWS to hand to the Consumer or Driver SDK. Never log it.
    public let token: String
    /// What the token is for.
    public let context: TokenContext
    /// When this client received it.
    public let receivedAt: Date
    /// When it expires, on this device's clock (see ``TokenProvider`` for how it is derived).
    public let expiresAt: Date
    /// From when a background refresh starts while the token keeps being served.
    public let refreshAfter: Date

    /// A token with its deadlines; ``TokenProvider`` builds these from gateway responses.
    public init(token: String, context: TokenContext, receivedAt: Date, expiresAt: Date, refreshAfter: Date) {
        self.token = token
        self.context = context
        self.receivedAt = receivedAt
        self.expiresAt = expiresAt
        self.refreshAfter = refreshAfter
    }

    /// The token redacted: the context and deadlines only.
    public var description: String {
        "FleetEngineToken(\(context), expiresAt: \(expiresAt), refreshAfter: \(refreshAfter))"
    }
}
