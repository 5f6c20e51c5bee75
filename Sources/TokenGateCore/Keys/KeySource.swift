import Foundation
public import JOSE

/// Where a set of verification keys comes from, as configuration states it: a value, never a running object.
///
/// A `.fixed` set was read from a file when the configuration was parsed. A `.url` set is fetched once the gateway
/// runs, by the one `RemoteKeySet` the generation's `KeySetDirectory` keeps for that URL, shared by every
/// tenant and every use (session tokens and backend tokens alike).
public enum KeySource: Sendable {
    /// Keys read from a JWKS file, a PEM key, a certificate or a service-account file.
    case fixed(JWKSet)
    /// A JWKS fetched from a URL and refreshed in the background.
    case url(JWKSURL)
}

/// A JWKS URL that passed the one URL policy, and how often it is fetched.
public struct JWKSURL: Sendable, Hashable, CustomStringConvertible {
    /// The URL: `https://`, or `http://` to a loopback host; never with credentials in it (it is logged).
    public let url: String
    /// How long a good set is used before it is fetched again: 30 s to 24 h.
    public let refreshInterval: Duration

    /// The shortest and longest refresh intervals accepted.
    public static let refreshIntervals: ClosedRange<Duration> = .seconds(30)...(.seconds(24 * 3600))
    /// The refresh interval when the configuration gives none.
    public static let defaultRefreshInterval: Duration = .seconds(3600)

    public var description: String { url }

    /// Builds a URL value without the configuration's checks; for tests and code that already validated `url`.
    public init(checked url: String, refreshInterval: Duration = defaultRefreshInterval) {
        self.url = url
        self.refreshInterval = refreshInterval
    }

    /// Where Google publishes a service account's public keys: `{serviceAccount}` is the account's email.
    public static let googleServiceAccountKeys = "https://www.googleapis.com/service_accounts/v1/jwk/{serviceAccount}"

    /// `template` (a validated URL with `{serviceAccount}`) for `account`, which is percent-encoded but for `@`.
    public static func serviceAccountKeys(_ template: String, of account: String, refreshInterval: Duration = defaultRefreshInterval) -> JWKSURL {
        let allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~@")
        let encoded = account.addingPercentEncoding(withAllowedCharacters: allowed) ?? account
        return JWKSURL(checked: template.replacingOccurrences(of: "{serviceAccount}", with: encoded), refreshInterval: refreshInterval)
    }

    /// Parses a `jwksUrl:` value and its optional `refreshInterval:` sibling with the one URL policy.
    ///
    /// `https://` only, except `http://` to a loopback host (keys fetched in the clear could be replaced in transit
    /// and then any token forged); no user or password in the URL, because the URL is logged.
    public static func parse(_ node: ConfigNode, refreshInterval intervalNode: ConfigNode?) throws -> JWKSURL {
        let text = try node.nonEmptyString()
        try checkPolicy(text, at: node, expecting: "the https:// URL of a JWKS")
        var interval = defaultRefreshInterval
        if let intervalNode {
            interval = try intervalNode.duration()
            guard refreshIntervals.contains(interval) else { throw intervalNode.error("expected a refresh interval from 30s to 24h") }
        }
        return JWKSURL(checked: text, refreshInterval: interval)
    }

    /// The one URL policy for what TokenGate fetches or asks over the network (JWKS URLs, authorizers): an
    /// absolute URL with a host, `https://`, or `http://` to a loopback host only, without user or password (the URL
    /// may be logged). `expecting` names what belongs there, for the error.
    public static func checkPolicy(_ text: String, at node: ConfigNode, expecting: String) throws {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty else {
            throw node.error("expected \(expecting), got '\(text)'")
        }
        guard url.user == nil, url.password == nil else { throw node.error("the URL must not carry credentials: it is logged") }
        switch scheme {
        case "https":
            break
        case "http":
            guard isLoopback(host) else {
                throw node.error("plain http is allowed only to a loopback host; use https:// for '\(host)'")
            }
        default:
            throw node.error("expected an https:// URL, got the scheme '\(scheme)'")
        }
    }

    /// Whether `host` is this machine: 127.0.0.0/8, `localhost` or `::1`.
    public static func isLoopback(_ host: String) -> Bool {
        let host = host.lowercased()
        if host == "localhost" || host == "::1" || host == "[::1]" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }
}

/// Keys that verify a backend's tokens, bound to the one service account whose tokens they may sign: a token
/// whose `iss` is anyone else's is refused (`wrong_issuer`) even when the signature is good.
public struct BoundKeySource: Sendable {
    /// Where the keys come from.
    public var source: KeySource
    /// The service account every key of `source` signs for.
    public var serviceAccount: String
    /// When the certificate the key came from expires (epoch seconds), if it came from one: the gateway logs when
    /// that time passes (it was refused at load if already past).
    public var certificateExpiresAt: Int64?

    /// Binds `source` to `serviceAccount`.
    public init(_ source: KeySource, serviceAccount: String, certificateExpiresAt: Int64? = nil) {
        self.source = source
        self.serviceAccount = serviceAccount
        self.certificateExpiresAt = certificateExpiresAt
    }
}
