import JOSE

/// One issued token, as the audit log records it: who got which token for what, and when it expires; never the
/// token itself, only its ``TokenFingerprint``.
struct AuditRecord: Sendable {
    var time: Int64
    var provider: ProviderID
    var context: TokenContext
    var caller: AuthenticatedCaller
    var keyID: String?
    var issuedAt: Int64
    var expiresAt: Int64
    var fingerprint: String
    /// The request that started the mint (for a refresh-ahead, the request that found the token due for one).
    var requestID: String?
    /// The address of the client whose request started the mint (behind a trusted proxy, the client's own).
    var peer: PeerAddress?
    /// The bound the tenant's authorizer set on `exp` (its `until`), when it set one.
    var notAfter: Int64?

    /// One JSON object and a newline; what could break or disguise the line (an ID may hold any character Fleet
    /// Engine allows) is escaped (`JSON.serializeLine`).
    var line: [UInt8] {
        var caller: JSONObject = ["client": .string(self.caller.name), "kind": .string(self.caller.kind.rawValue)]
        if let subject = self.caller.subject { caller["subject"] = .string(subject) }
        var object: JSONObject = [
            "time": .string(RFC3339.format(time)),
            "event": .string("token_issued"),
            "provider": .string(provider.rawValue),
            "tokenType": .string(self.context.tokenType.rawValue),
            "context": .object(self.context.jsonObject),
            "caller": .object(caller),
            "iat": .integer(issuedAt),
            "exp": .integer(expiresAt),
            "fingerprint": .string(fingerprint),
        ]
        if let keyID { object["kid"] = .string(keyID) }
        if let requestID { object["requestId"] = .string(requestID) }
        if let peer { object["peer"] = .string(peer.description) }
        if let notAfter { object["until"] = .integer(notAfter) }
        return JSON.serializeLine(.object(object)) + [UInt8(ascii: "\n")]
    }
}
