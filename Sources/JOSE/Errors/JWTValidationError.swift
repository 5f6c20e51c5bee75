/// Why a token was rejected: a stable reason code plus a human sentence (never the token itself).
public struct JWTValidationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable reason codes; `rawValue` goes into logs, metrics and CLI output.
    public struct Reason: Hashable, Sendable, CustomStringConvertible {
        /// The stable code, e.g. `"bad_signature"`.
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }
        /// The stable code.
        public var description: String { rawValue }

        /// `malformed`: bad segments, base64url, JSON, header fields or claim types.
        public static let malformed = Reason("malformed")
        /// `token_too_large`: over the size cap (checked before any decoding).
        public static let tokenTooLarge = Reason("token_too_large")
        /// `jwe_not_supported`: five segments.
        public static let jweNotSupported = Reason("jwe_not_supported")
        /// `unsupported_crit`: a `crit` header member is present.
        public static let unsupportedCrit = Reason("unsupported_crit")
        /// `alg_not_allowed`: `none`, unknown, or outside the allow-list.
        public static let algNotAllowed = Reason("alg_not_allowed")
        /// `key_alg_mismatch`: the header `alg` differs from the key's algorithm.
        public static let keyAlgMismatch = Reason("key_alg_mismatch")
        /// `missing_kid`: the policy requires a `kid`, several keys could apply, or only keys with a kid fit.
        public static let missingKid = Reason("missing_kid")
        /// `unknown_kid`: never falls back to a default key.
        public static let unknownKid = Reason("unknown_kid")
        /// `bad_signature`.
        public static let badSignature = Reason("bad_signature")
        /// `missing_claim`: `exp` required, or `iat`/`exp` needed for the lifetime check.
        public static let missingClaim = Reason("missing_claim")
        /// `expired`.
        public static let expired = Reason("expired")
        /// `not_yet_valid`: `nbf` is ahead beyond the leeway.
        public static let notYetValid = Reason("not_yet_valid")
        /// `issued_in_future`: `iat` is ahead beyond the leeway.
        public static let issuedInFuture = Reason("issued_in_future")
        /// `wrong_issuer`.
        public static let wrongIssuer = Reason("wrong_issuer")
        /// `wrong_audience`.
        public static let wrongAudience = Reason("wrong_audience")
        /// `lifetime_too_long`: `exp - iat` over the policy's maximum.
        public static let lifetimeTooLong = Reason("lifetime_too_long")
        /// `wrong_type`: header `typ` differs from the one the policy requires.
        public static let wrongType = Reason("wrong_type")
    }

    /// Why the token was rejected.
    public let reason: Reason
    /// A human sentence; never the token.
    public let message: String

    /// Creates an error.
    public init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }

    /// `reason: message`.
    public var description: String { "\(reason.rawValue): \(message)" }

    /// Equal on the reason only.
    public static func == (lhs: JWTValidationError, rhs: JWTValidationError) -> Bool { lhs.reason == rhs.reason }
}
