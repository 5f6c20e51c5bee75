import JOSE
import TokenGateCore

/// Where the token and its expiry sit in the upstream's JSON response.
///
/// ```yaml
/// response: { tokenKey: jwt, expiryKey: expirationTimestamp, expiryFormat: epoch-milliseconds }
/// ```
/// Both keys are optional: the default is `tokenKey: token` and no expiry key. The token's own `exp` is
/// authoritative; the expiry field is only compared with it.
struct UpstreamResponseMapping: Sendable, Equatable {
    /// The member holding the compact JWT.
    var tokenKey = "token"
    /// The member holding the expiry, and what it means.
    var expiry: (key: String, format: ResponseMapping.ExpiryFormat)?

    /// What one response body held.
    struct Parsed: Sendable, Equatable {
        var token: String
        /// The expiry the upstream claimed, epoch seconds, if the mapping names one and it was a number.
        var claimedExpiry: Int64?
    }

    static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.tokenKey == rhs.tokenKey && lhs.expiry?.key == rhs.expiry?.key && lhs.expiry?.format == rhs.expiry?.format
    }

    static func parse(_ node: ConfigNode) throws -> UpstreamResponseMapping {
        let mapping = try node.mapping(allowedKeys: ["tokenKey", "expiryKey", "expiryFormat"])
        var result = UpstreamResponseMapping()
        if let tokenKey = mapping.optional("tokenKey") { result.tokenKey = try tokenKey.nonEmptyString() }
        switch (mapping.optional("expiryKey"), mapping.optional("expiryFormat")) {
        case (nil, nil):
            break
        case (let keyNode?, let formatNode?):
            let key = try keyNode.nonEmptyString()
            guard key != result.tokenKey else { throw keyNode.error("must differ from tokenKey") }
            let text = try formatNode.string()
            guard let format = ResponseMapping.ExpiryFormat(rawValue: text) else {
                throw formatNode.error(
                    "unknown expiry format '\(text)'; expected one of: "
                        + ResponseMapping.ExpiryFormat.allCases.map(\.rawValue).joined(separator: ", ")
                )
            }
            result.expiry = (key, format)
        case (let keyNode?, nil):
            throw keyNode.error("give expiryFormat too: epoch-seconds, epoch-milliseconds or seconds-from-now")
        case (nil, let formatNode?):
            throw formatNode.error("expiryFormat needs an expiryKey")
        }
        return result
    }

    /// Reads the token (and expiry) from a response body; `now` turns a relative expiry into an absolute one.
    func extract(from body: [UInt8], now: Int64) throws(TokenGateError) -> Parsed {
        guard let value = try? JSON.parse(body), case .object(let object) = value else {
            throw TokenGateError(.backendError, "the upstream response is not a JSON object")
        }
        guard let member = object[tokenKey] else {
            throw TokenGateError(.backendError, "the upstream response has no '\(tokenKey)' member")
        }
        guard case .string(let token) = member, !token.isEmpty else {
            throw TokenGateError(.backendError, "the upstream response's '\(tokenKey)' member is not a non-empty string")
        }
        guard let expiry else { return Parsed(token: token, claimedExpiry: nil) }
        let number: Int64? =
            switch object[expiry.key] {
            case .integer(let integer)?: integer
            case .double(let double)? where double.isFinite && abs(double) < 1e15: Int64(double)
            default: nil
            }
        guard let number else { return Parsed(token: token, claimedExpiry: nil) }
        let seconds: Int64 =
            switch expiry.format {
            case .epochSeconds: number
            case .epochMilliseconds: number / 1000
            case .secondsFromNow: now.addingReportingOverflow(number).overflow ? .max : now + number
            }
        return Parsed(token: token, claimedExpiry: seconds)
    }
}
