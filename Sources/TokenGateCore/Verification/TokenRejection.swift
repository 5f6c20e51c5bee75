package import JOSE

/// Why a token must not reach a client: a JOSE reason or a Fleet Engine scope reason, with a human sentence.
///
/// `reason` is the stable code that logs, metrics, `verify-token --json` and tests match on; `message` is for people.
package struct TokenRejection: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable, machine-readable reason code (`bad_signature`, `wrong_context`, …).
    package struct Reason: Hashable, Sendable, CustomStringConvertible {
        /// The code as written in logs and JSON.
        package let rawValue: String
        /// Creates a reason from its code.
        package init(_ rawValue: String) { self.rawValue = rawValue }
        package var description: String { rawValue }

        /// The `authorization` claim is not exactly the one for the requested type and context.
        package static let wrongContext = Reason("wrong_context")
        /// A client-facing token carries `*`.
        package static let wildcardClaim = Reason("wildcard_claim")
        /// `iss`/`sub` missing, different, or not the service account bound to the signing key.
        package static let wrongIssuer = Reason("wrong_issuer")
        /// Less life left than the provider's `minRemaining`.
        package static let insufficientLifetime = Reason("insufficient_lifetime")
        /// `exp` is after the bound the tenant's authorizer set for the context (its `until`).
        package static let outlivesBound = Reason("outlives_bound")
        /// The `kid` names no key of the set: the keys may have rotated (JOSE's code, so both speak one vocabulary).
        package static let unknownKid = Reason(JWTValidationError.Reason.unknownKid.rawValue)
    }

    /// The stable reason code.
    package let reason: Reason
    /// A sentence for operators. Never holds the token.
    package let message: String

    /// Creates a rejection.
    package init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }

    /// Carries a JOSE verification failure over unchanged, so both speak one vocabulary of codes.
    package init(_ error: JWTValidationError) {
        self.init(Reason(error.reason.rawValue), error.message)
    }

    package var description: String { "\(reason): \(message)" }

    /// Equal on the reason code: the message is for people and may be reworded.
    package static func == (lhs: TokenRejection, rhs: TokenRejection) -> Bool { lhs.reason == rhs.reason }
}
