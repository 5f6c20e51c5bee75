import JOSE
import TokenGateCore

/// The body of a successful token response: TokenGate's own shape, or a provider's legacy `response:` mapping.
enum TokenResponse {
    static func body(for grant: TokenGrant, now: Int64) -> [UInt8] {
        var body = JSONObject()
        if let mapping = grant.provider.response {
            // The app's existing keys come first; TokenGate's own fields follow where their names are free.
            body[mapping.tokenKey] = .string(grant.token.compact)
            body[mapping.expiryKey] = .integer(mapping.expiryFormat.value(expiresAt: grant.token.expiresAt, now: now))
        }
        for (key, value) in standardFields(for: grant, now: now) where body[key] == nil {
            body[key] = value
        }
        return JSON.serialize(.object(body))
    }

    private static func standardFields(for grant: TokenGrant, now: Int64) -> [(String, JSONValue)] {
        var context = JSONObject()
        if let name = grant.context.parameterName, let id = grant.context.id { context[name] = .string(id.rawValue) }
        return [
            ("token", .string(grant.token.compact)),
            ("tokenType", .string(grant.context.tokenType.rawValue)),
            ("providerId", .string(grant.provider.id.rawValue)),
            ("context", .object(context)),
            ("issuedAt", .integer(grant.token.issuedAt)),
            ("expiresAt", .integer(grant.token.expiresAt)),
            ("expiresIn", .integer(max(0, grant.token.expiresAt - now))),
            ("refreshAfter", .integer(grant.refreshAfter)),
        ]
    }
}
