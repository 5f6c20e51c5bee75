public import OpenSSLPrimitives

/// A key that cannot be loaded or used. A struct over a stable reason code, equal on the reason.
public struct JWSKeyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable reason codes; `rawValue` is safe for logs, metrics and exit messages.
    public struct Reason: Hashable, Sendable, CustomStringConvertible {
        /// The stable code, e.g. `"weak_key"`.
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }
        /// The stable code.
        public var description: String { rawValue }

        /// `malformed_key`: unparseable PEM, JWK or JSON; an empty key ID.
        public static let malformedKey = Reason("malformed_key")
        /// `unsupported_key`: a key type or curve this module does not do (e.g. DSA, secp256k1).
        public static let unsupportedKey = Reason("unsupported_key")
        /// `weak_key`: RSA under 2048 bits or with a public exponent that is even, 1, or over 2^32 (or otherwise
        /// failing OpenSSL's public-key check), or an HMAC secret shorter than the hash output.
        public static let weakKey = Reason("weak_key")
        /// `invalid_ec_point`: an EC public point that is not on its curve.
        public static let invalidECPoint = Reason("invalid_ec_point")
        /// `key_algorithm_mismatch`: e.g. a P-256 key for ES384, an RSA key for ES256.
        public static let algorithmMismatch = Reason("key_algorithm_mismatch")
        /// `duplicate_kid`: two keys of one set share a key ID.
        public static let duplicateKeyID = Reason("duplicate_kid")
        /// `mixed_key_types`: symmetric and asymmetric keys in one set.
        public static let mixedKeyTypes = Reason("mixed_key_types")
        /// `encryption_key`: a JWK with `"use": "enc"`, or whose `key_ops` allow neither `sign` nor `verify`.
        public static let encryptionKey = Reason("encryption_key")
        /// `not_a_private_key`: signing with a public key.
        public static let notPrivate = Reason("not_a_private_key")
        /// `key_mismatch`: a certificate that is not for the private key it is paired with.
        public static let keyMismatch = Reason("key_mismatch")
        /// `openssl_error`: OpenSSL failed on an operation that should have worked.
        public static let openSSL = Reason("openssl_error")
    }

    /// Why the key was refused.
    public let reason: Reason
    /// A human sentence; never key material.
    public let message: String
    /// The drained OpenSSL error queue when OpenSSL took part in the failure (e.g. a garbage PEM body).
    public let openSSLError: OpenSSLError?

    /// Creates an error.
    public init(_ reason: Reason, _ message: String, openSSLError: OpenSSLError? = nil) {
        self.reason = reason
        self.message = message
        self.openSSLError = openSSLError
    }

    /// `reason: message`.
    public var description: String { "\(reason.rawValue): \(message)" }

    /// Equal on the reason only, so tests and callers can match `JWSKeyError(.weakKey, "")`-style values.
    public static func == (lhs: JWSKeyError, rhs: JWSKeyError) -> Bool { lhs.reason == rhs.reason }

    // An OpenSSL failure during an operation that should work becomes `openssl_error` with its queue.
    static func openSSL(_ error: OpenSSLError) -> JWSKeyError {
        JWSKeyError(.openSSL, "OpenSSL failed in \(error.operation).", openSSLError: error)
    }
}
