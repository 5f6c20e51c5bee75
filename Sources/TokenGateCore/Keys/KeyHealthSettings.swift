import Foundation

/// `keyHealth:` of a provider: how its signing keys are watched, so a key Google no longer accepts is found before
/// Fleet Engine rejects every token signed with it.
///
/// ```yaml
/// keyHealth:
///   checkPublished: true     # ask Google whether it still lists each signing key (off by default)
///   publishedKeysUrl: https://www.googleapis.com/service_accounts/v1/jwk/{serviceAccount}   # the default
///   interval: 1h             # how often (also at start and on every reload)
///   expiryWarning: 720h      # degraded this long before a key's `expires:` date (30 days, the default)
/// ```
package struct KeyHealthSettings: Sendable, Equatable {
    /// Whether each signing key's `kid` is looked up among the keys Google publishes for its account.
    package var checkPublished = false
    /// Where an account's public keys are published; `{serviceAccount}` is the service account's email.
    package var publishedKeysURL = JWKSURL.googleServiceAccountKeys
    /// How often the published keys are fetched again.
    package var interval: Duration = JWKSURL.defaultRefreshInterval
    /// How long before a key's `expires:` date the provider is reported degraded.
    package var expiryWarning: Duration = .seconds(30 * 86_400)

    static let keys: Set<String> = ["checkPublished", "publishedKeysUrl", "interval", "expiryWarning"]

    /// The defaults: expiry dates watched, Google not asked.
    package init() {}

    /// The published-keys URL of `account`, fetched every `interval`.
    func publishedKeys(of account: String) -> JWKSURL {
        JWKSURL.serviceAccountKeys(publishedKeysURL, of: account, refreshInterval: interval)
    }

    static func parse(_ node: ConfigNode) throws -> KeyHealthSettings {
        let mapping = try node.mapping(allowedKeys: keys)
        var settings = KeyHealthSettings()
        if let node = mapping.optional("checkPublished") { settings.checkPublished = try node.bool() }
        if let node = mapping.optional("publishedKeysUrl") {
            let template = try node.nonEmptyString()
            guard template.components(separatedBy: "{serviceAccount}").count == 2 else {
                throw node.error("the URL must name the account once, as {serviceAccount}, e.g. \(JWKSURL.googleServiceAccountKeys)")
            }
            try JWKSURL.checkPolicy(
                template.replacingOccurrences(of: "{serviceAccount}", with: "account"), at: node, expecting: "the https:// URL of an account's JWKS")
            settings.publishedKeysURL = template
        }
        if let node = mapping.optional("interval") {
            settings.interval = try node.duration()
            guard JWKSURL.refreshIntervals.contains(settings.interval) else { throw node.error("expected an interval from 30s to 24h") }
        }
        if let node = mapping.optional("expiryWarning") {
            settings.expiryWarning = try node.duration()
            guard settings.expiryWarning <= .seconds(365 * 86_400) else { throw node.error("expected at most 8760h (a year)") }
        }
        return settings
    }
}
