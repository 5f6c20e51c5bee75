import Foundation
import JOSE
import TokenGateCore

/// What `verify-token` prints: the decoded header and claims, the time left and the verdict.
struct TokenReport {
    let header: JSONObject?
    let claims: JSONObject?
    let outcome: Result<VerifiedJWT, TokenRejection>
    let now: Int64
    /// `sha256:` and the lower-case hex SHA-256 of the compact token's bytes: names a token in an audit trail
    /// without repeating it.
    let fingerprint: String

    init(token: String, outcome: Result<VerifiedJWT, TokenRejection>, now: Int64) throws {
        // Decoded for display only; the verdict comes from `outcome`.
        let decoded = JWTVerifier.decodeUnverified(token)
        self.header = decoded.header
        self.claims = decoded.claims
        self.outcome = outcome
        self.now = now
        self.fingerprint = TokenFingerprint.of(token)
    }

    var reasonCode: String {
        switch outcome {
        case .success: "valid"
        case .failure(let rejection): rejection.reason.rawValue
        }
    }

    // Whole seconds, a fraction rounded down: the time the expiry check uses, so the display never promises more.
    private var expiresAt: Int64? { Self.seconds(claims?["exp"], "exp") }
    private var issuedAt: Int64? { Self.seconds(claims?["iat"], "iat") }

    private static func seconds(_ value: JSONValue?, _ name: String) -> Int64? {
        value.flatMap { try? NumericDate($0, claim: name).floor }
    }

    func text() -> String {
        var lines: [String] = []
        lines.append("header:  " + (header.map { Self.render(.object($0)) } ?? "(not a JSON object)"))
        lines.append("claims:  " + (claims.map { Self.render(.object($0)) } ?? "(not a JSON object)"))
        if let issuedAt { lines.append("issued:  \(Self.date(issuedAt))") }
        if let expiresAt {
            let left = expiresAt - now
            lines.append("expires: \(Self.date(expiresAt)) (\(left >= 0 ? "\(Self.span(left)) left" : "\(Self.span(-left)) ago"))")
        }
        lines.append("fingerprint: \(fingerprint)")
        switch outcome {
        case .success: lines.append("verdict: valid")
        case .failure(let rejection): lines.append("verdict: invalid (\(rejection.reason)): \(rejection.message)")
        }
        return lines.joined(separator: "\n")
    }

    func json() -> String {
        var object = JSONObject()
        switch outcome {
        case .success:
            object["valid"] = .bool(true)
        case .failure(let rejection):
            object["valid"] = .bool(false)
            object["reason"] = .string(rejection.reason.rawValue)
            object["message"] = .string(rejection.message)
        }
        object["header"] = header.map(JSONValue.object) ?? .null
        object["claims"] = claims.map(JSONValue.object) ?? .null
        object["expiresIn"] = expiresAt.map { .integer($0 - now) } ?? .null
        object["fingerprint"] = .string(fingerprint)
        return String(decoding: JSON.serialize(.object(object)), as: UTF8.self)
    }

    private static func render(_ value: JSONValue) -> String { String(decoding: JSON.serialize(value), as: UTF8.self) }

    private static func date(_ epoch: Int64) -> String {
        Date(timeIntervalSince1970: TimeInterval(epoch)).formatted(.iso8601)
    }

    private static func span(_ seconds: Int64) -> String {
        let (hours, minutes, rest) = (seconds / 3600, seconds % 3600 / 60, seconds % 60)
        return hours > 0 ? "\(hours)h \(minutes)m \(rest)s" : minutes > 0 ? "\(minutes)m \(rest)s" : "\(rest)s"
    }
}
