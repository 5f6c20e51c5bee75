import JOSE

/// What an executable source prints (and may cache in its output file), version 1 of Google's format:
///
///     {"version": 1, "success": true, "token_type": "urn:ietf:params:oauth:token-type:id_token",
///      "id_token": "…", "expiration_time": 1700000000}
///     {"version": 1, "success": false, "code": "401", "message": "Caller not authorized."}
///
/// Checked in google-auth's order: `version` (at most 1), `success`, on failure `code` and `message`, then
/// `expiration_time` (optional, never past), `token_type` and its token (`id_token` for the JWT and ID token types,
/// `saml_response` for SAML 2).
struct ExecutableResponse: Sendable {
    static let jwt = "urn:ietf:params:oauth:token-type:jwt"
    static let idToken = "urn:ietf:params:oauth:token-type:id_token"
    static let saml = "urn:ietf:params:oauth:token-type:saml2"

    /// The subject token: a secret, never logged.
    let token: String
    let tokenType: String
    /// `expiration_time`, epoch seconds.
    let expiresAt: Int64?

    /// Why a response cannot be used. google-auth tells the two apart: a malformed response is an error even in
    /// the output file, an unusable one (failed, expired, of another version or token type) there only means "run
    /// the executable again".
    enum Problem: Error {
        case malformed(String)
        case unusable(GoogleAuthError.Kind, String)
    }

    /// The response in `object`, as of `now` (epoch seconds).
    init(_ object: JSONObject, now: Int64) throws(Problem) {
        guard let version = object["version"] else { throw .malformed("has no \"version\"") }
        guard case .integer(let number) = version else { throw .malformed("has a \"version\" that is not a number") }
        guard number <= 1 else { throw .unusable(.malformedAnswer, "is of version \(number); 1 is the newest supported") }
        guard let success = object["success"] else { throw .malformed("has no \"success\"") }
        guard case .bool(let succeeded) = success else { throw .malformed("has a \"success\" that is not true or false") }
        guard succeeded else {
            guard let code = object["code"], let message = object["message"] else {
                throw .malformed("reports a failure without \"code\" and \"message\"")
            }
            throw .unusable(.credentialSourceFailed, "reports a failure: code \(Self.text(code)), message \(Self.text(message))")
        }
        let expiry: Int64?
        switch object["expiration_time"] {
        case nil, .null?: expiry = nil
        case .integer(let seconds)?: expiry = seconds
        // Python compares any number; a fractional one (time.time() + 3600) is read to whole seconds.
        case .double(let seconds)? where seconds.isFinite && abs(seconds) < 1e12: expiry = Int64(seconds)
        default: throw .malformed("has an \"expiration_time\" that is not a number of seconds")
        }
        if let expiry, expiry < now { throw .unusable(.credentialSourceFailed, "holds a token that expired at \(expiry)") }
        expiresAt = expiry
        guard let type = object["token_type"] else { throw .malformed("has no \"token_type\"") }
        let field: String
        switch type.stringValue {
        case Self.jwt?, Self.idToken?: field = "id_token"
        case Self.saml?: field = "saml_response"
        default: throw .unusable(.malformedAnswer, "has a \"token_type\" that is neither a JWT, an ID token nor SAML 2")
        }
        guard let token = object[field]?.stringValue, !token.isEmpty else { throw .malformed("has no \"\(field)\"") }
        self.token = token
        tokenType = type.stringValue ?? ""
    }

    /// A `code` or `message` as operators read it: a string or a number, printable, bounded.
    private static func text(_ value: JSONValue) -> String {
        let text: String =
            switch value {
            case .string(let string): string
            case .integer(let number): "\(number)"
            default: "(not a string)"
            }
        return GoogleErrorBody.clean(text, scrubbing: [])
    }
}
