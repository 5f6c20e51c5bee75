import JOSE

/// A 2xx answer's body, and helpers to read Google's JSON out of it.
struct GoogleAnswer: Sendable {
    let body: [UInt8]
    let what: String

    /// The body as a JSON object, else `.malformedAnswer`.
    func object() throws(GoogleAuthError) -> JSONObject {
        guard let value = try? JSON.parse(body), case .object(let object) = value else {
            throw GoogleAuthError(.malformedAnswer, "\(what) answered with something other than a JSON object")
        }
        return object
    }

    /// A required non-empty string member.
    static func string(_ object: JSONObject, _ field: String, what: String) throws(GoogleAuthError) -> String {
        guard let value = object[field]?.stringValue, !value.isEmpty else {
            throw GoogleAuthError(.malformedAnswer, "\(what) answered without \"\(field)\"")
        }
        return value
    }

    /// An OAuth token answer (`access_token`, `expires_in` in seconds from now) as a token expiring relative to
    /// `issuedAt`, the moment the request was sent (a conservative start for the lifetime).
    func oauthToken(issuedAt: Int64) throws(GoogleAuthError) -> GoogleAccessToken {
        let object = try object()
        let value = try Self.string(object, "access_token", what: what)
        let expiresIn: Int64? =
            switch object["expires_in"] {
            case .integer(let seconds)?: seconds
            case .double(let seconds)? where seconds.isFinite && abs(seconds) < 1e9: Int64(seconds)
            case .string(let text)?: Int64(text)  // some token servers send it as a string
            default: nil
            }
        guard let expiresIn else {
            throw GoogleAuthError(.malformedAnswer, "\(what) answered without a numeric \"expires_in\"")
        }
        guard expiresIn >= 0, expiresIn <= 24 * 3600 else {
            throw GoogleAuthError(.malformedAnswer, "\(what) answered with \"expires_in\" \(expiresIn), not 0...86400")
        }
        return GoogleAccessToken(value: value, expiresAt: issuedAt + expiresIn)
    }
}
