public import JOSE

/// Why a token must not reach a client: a JOSE reason or a Fleet Engine scope reason, with a human sentence.
///
/// `reason` is the stable code that logs, metrics, `verify-token --json` and tests match on; `message` is for people.
public struct TokenRejection: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable, machine-readable reason code (`bad_signature`, `wrong_context`, …).
    public struct Reason: Hashable, Sendable, CustomStringConvertible {
        /// The code as written in logs and JSON.
        public let rawValue: String
        /// Creates a reason from its code.
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The `authorization` claim is not exactly the one for the requested type and context.
        public static let wrongContext = Reason("wrong_context")
        /// A client-facing token carries `*`.
        public static let wildcardClaim = Reason("wildcard_claim")
        /// `iss`/`sub` missing, different, or not the service account bound to the signing key.
        public static let wrongIssuer = Reason("wrong_issuer")
        /// Less life left than the provider's `minRemaining`.
        public static let insufficientLifetime = Reason("insufficient_lifetime")
        /// `exp` is after the bound the tenant's authorizer set for the context (its `until`).
        public static let outlivesBound = Reason("outlives_bound")
        /// The `kid` names no key of the set: the keys may have rotated (JOSE's code, so both speak one vocabulary).
        public static let unknownKid = Reason(JWTValidationError.Reason.unknownKid.rawValue)
    }

    /// The stable reason code.
    public let reason: Reason
    /// A sentence for operators. Never holds the token.
    public let message: String

    /// Creates a rejection.
    public init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }

    /// Carries a JOSE verification failure over unchanged, so both speak one vocabulary of codes.
    public init(_ error: JWTValidationError) {
        self.init(Reason(error.reason.rawValue), error.message)
    }

    public var description: String { "\(reason): \(message)" }

    /// Equal on the reason code: the message is for people and may be reworded.
    public static func == (lhs: TokenRejection, rhs: TokenRejection) -> Bool { lhs.reason == rhs.reason }
}
