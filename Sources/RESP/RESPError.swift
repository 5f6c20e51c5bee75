/// Why a command, a connection or the pool failed. Arguments never appear in these (they may hold secrets).
package enum RESPError: Error, Sendable, Hashable {
    /// The server answered with an error reply: its whole text, code first (`NOSCRIPT No matching script…`,
    /// `WRONGPASS …`, `NOAUTH …`).
    case server(String)
    /// The command named here did not answer within its deadline. The connection was closed: a late reply would
    /// be taken as the answer to the next command.
    case timeout(command: String)
    /// The connection closed (or was closed) before the reply arrived.
    case connectionClosed
    /// The transport failed before the reply arrived (a TLS handshake or certificate check, a reset); the text says
    /// how.
    case connectionFailed(String)
    /// The server sent bytes that are not RESP, or exceed the decoder's limits; the connection was closed.
    case protocolViolation(RESPDecodingError)
    /// The reply had a shape the typed command did not expect (a string where an integer belongs).
    case unexpectedReply(command: String, reply: String)
    /// No connection could be opened: the last failure, and the pool waits out a backoff before trying again.
    case unavailable(reason: String)
    /// Every connection was busy and no connection freed up within the lease deadline, or too many callers waited.
    case poolExhausted
    /// The client was shut down.
    case shutdown

    /// The error code of a server reply, its first word (`NOSCRIPT`, `WRONGPASS`); nil for other errors.
    package var serverCode: Substring? {
        guard case .server(let message) = self else { return nil }
        return message.split(separator: " ", maxSplits: 1).first
    }
}
