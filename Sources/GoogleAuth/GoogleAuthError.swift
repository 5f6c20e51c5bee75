/// Why credentials could not be resolved or an access token could not be had. Its `message` names the file, field,
/// URL or Google's own error text, and never holds a private key, refresh token, client secret or access token.
package struct GoogleAuthError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, for callers that branch on it (never branch on `message`).
    package enum Kind: Sendable, Equatable {
        /// A credentials file, environment variable or endpoint that cannot be used as it is.
        case configuration
        /// Nothing answered: connection refused, DNS, TLS, reset (after the retries).
        case unreachable
        /// Google answered with this HTTP status: a final 4xx, or a 429/5xx that outlasted the retries.
        case refused(status: Int)
        /// The fetch's deadline passed.
        case timeout
        /// A 2xx answer that was not what Google sends (not JSON, a field missing, too large, no `Metadata-Flavor`),
        /// or a credential source's answer that is not what its format says.
        case malformedAnswer
        /// A credential source on this machine ran and failed: an executable exited non-zero, was killed, or
        /// reported a failure or an expired token.
        case credentialSourceFailed
    }

    /// What went wrong.
    package let kind: Kind
    /// For operators: what was asked of whom and what came back.
    package let message: String

    /// An error of `kind`; `message` must hold no secret.
    package init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// The message alone, in words an operator reads after the caller's own context ("Application Default
    /// Credentials: …"); the kind is for code to branch on, not for the reader.
    package var description: String { message }
}
