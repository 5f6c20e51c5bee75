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

    /// One JSON object and a newline.
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
        return JSON.serialize(.object(object)) + [UInt8(ascii: "\n")]
    }
}

/// `2026-11-22T15:04:05Z` from epoch seconds.
enum RFC3339 {
    static func format(_ seconds: Int64) -> String {
        // Days since the epoch to a civil date (Howard Hinnant's algorithm): no Foundation formatter per line.
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let (hour, minute, second) = (secondOfDay / 3600, secondOfDay / 60 % 60, secondOfDay % 60)
        return "\(year)-\(two(month))-\(two(day))T\(two(hour)):\(two(minute)):\(two(second))Z"
    }
}
