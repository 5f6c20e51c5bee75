package import TokenGateCore

/// What one look at the token file did. Every outcome but `reloaded` leaves the tokens in force unchanged.
package enum TokenFileReload: Sendable, Equatable, CustomStringConvertible {
    /// The file's content is the one already loaded.
    case unchanged
    /// The content is new but differs from what the previous look saw: the file may still be being written, so it is
    /// loaded only once two looks in a row read the same bytes. Only when stable content is required.
    case changing
    /// The new content parsed and replaced the old tokens: `loaded` tokens are in force, `skipped` were refused.
    case reloaded(loaded: Int, skipped: [SkippedToken])
    /// The file could not be read or parsed; the previous tokens stay in force. `reason` says why, located.
    case failed(reason: String)

    package var description: String {
        switch self {
        case .unchanged: "unchanged"
        case .changing: "changing"
        case .reloaded(let loaded, let skipped): "reloaded: \(loaded) tokens, \(skipped.count) skipped"
        case .failed(let reason): "failed: \(reason)"
        }
    }
}

/// A token in the file that is not served, and why. Never holds the token itself.
package struct SkippedToken: Sendable, Equatable, CustomStringConvertible {
    /// Where the token is: `tokens/acme.yaml:3:12`.
    package var location: String
    /// The entry's key path in the file: `consumer.trip-42`.
    package var keyPath: String
    /// The stable reason code: a `TokenRejection` code (`bad_signature`, `wrong_context`, `expired`, …) or
    /// `invalid_context` for a context ID TokenGate refuses.
    package var reason: TokenRejection.Reason
    /// A sentence for operators.
    package var message: String

    /// Creates a record of a skipped token.
    package init(location: String, keyPath: String, reason: TokenRejection.Reason, message: String) {
        self.location = location
        self.keyPath = keyPath
        self.reason = reason
        self.message = message
    }

    package var description: String { "\(location): \(keyPath): \(reason): \(message)" }
}
