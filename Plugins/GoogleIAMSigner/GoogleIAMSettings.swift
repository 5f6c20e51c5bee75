import Foundation
import TokenGateCore

/// The `google-iam` backend's section, validated.
///
/// ```yaml
/// backend:
///   type: google-iam
///   tokenLifetime: 1h                 # 1m to 1h (default 1h); or per type: { default: 1h, consumer: 15m }
///   wholeFleetTokenLifetime: 10m      # fleet readers and server tokens (default 10m, at most tokenLifetime)
///   serviceAccounts:                  # per token type: the Fleet Engine service account that signs it
///     consumer: fleet-consumer@acme.iam.gserviceaccount.com
///     driver: fleet-driver@acme.iam.gserviceaccount.com
///   credentialsFile: /etc/tokengate/adc.json   # optional; else Application Default Credentials
///   delegates: [broker@acme.iam.gserviceaccount.com]   # optional IAM delegation chain
///   maxConcurrentSigns: 64            # IAM calls in flight for this provider (1 to 1024)
///   quotaProject: acme-rides          # optional: the project Google bills and limits this provider's IAM calls on
///   timeout: 5s                       # one token's IAM call, retries included (100ms to 60s)
///   endpoints:                        # Google's by default; http:// only to loopback
///     iamCredentials: https://iamcredentials.googleapis.com
///     publicKeys: https://www.googleapis.com/service_accounts/v1/jwk/{serviceAccount}
///     oauthToken: https://oauth2.googleapis.com/token
/// ```
struct GoogleIAMSettings: Sendable {
    static let defaultIAMCredentials = "https://iamcredentials.googleapis.com"
    static let defaultPublicKeys = JWKSURL.googleServiceAccountKeys
    static let defaultOAuthToken = "https://oauth2.googleapis.com/token"

    var lifetimes = TokenLifetimes()
    var serviceAccounts: [TokenType: String] = [:]
    var credentialsFile: String?
    var delegates: [String] = []
    var maxConcurrentSigns = 64
    /// Sent as `x-goog-user-project` on this provider's IAM calls, over the credentials file's `quota_project_id`: each
    /// tenant's calls count against its own project's quota, not the gateway's (the gateway's identity then needs
    /// `serviceusage.services.use` on it).
    var quotaProject: String?
    var timeout: Duration = .seconds(5)
    var iamCredentials = defaultIAMCredentials
    var publicKeys = defaultPublicKeys
    var oauthToken = defaultOAuthToken

    /// The keys the section may have.
    static let keys: Set<String> = [
        "type", "serviceAccounts", "credentialsFile", "delegates", "maxConcurrentSigns",
        "quotaProject", "timeout", "endpoints",
    ]

    static func parse(_ node: ConfigNode) throws -> GoogleIAMSettings {
        let section = try node.mapping(allowedKeys: keys.union(TokenLifetimes.keys))
        var settings = GoogleIAMSettings()
        let accountsNode = try section.required("serviceAccounts")
        for (typeName, accountNode) in try accountsNode.entries() {
            guard let type = TokenType(rawValue: typeName) else {
                throw accountNode.keyError("unknown token type; expected one of: \(TokenType.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            settings.serviceAccounts[type] = try serviceAccount(accountNode)
        }
        guard !settings.serviceAccounts.isEmpty else { throw accountsNode.error("name a service account for at least one token type") }
        settings.lifetimes = try TokenLifetimes.parse(section, issuing: Set(settings.serviceAccounts.keys))
        if let value = section.optional("credentialsFile") { settings.credentialsFile = try value.path() }
        if let value = section.optional("delegates") { settings.delegates = try value.sequence().map(serviceAccount) }
        if let value = section.optional("maxConcurrentSigns") { settings.maxConcurrentSigns = try value.int(in: 1...1024) }
        if let value = section.optional("quotaProject") {
            let text = try value.nonEmptyString()
            // A project ID (6 to 30 lower-case letters, digits and hyphens) or a project number: it goes into a header.
            guard ProviderID(text) != nil || (text.count <= 20 && text.allSatisfy(\.isASCII) && text.allSatisfy(\.isNumber)) else {
                throw value.error("expected a Google Cloud project ID or number, got '\(text.prefix(64))'")
            }
            settings.quotaProject = text
        }
        if let value = section.optional("timeout") {
            settings.timeout = try value.duration()
            guard (.milliseconds(100)...(.seconds(60))).contains(settings.timeout) else { throw value.error("must be between 100ms and 60s") }
        }
        if let endpoints = section.optional("endpoints") {
            let mapping = try endpoints.mapping(allowedKeys: ["iamCredentials", "publicKeys", "oauthToken"])
            if let value = mapping.optional("iamCredentials") { settings.iamCredentials = try url(value, "the IAM Credentials API's base URL") }
            if let value = mapping.optional("publicKeys") {
                settings.publicKeys = try url(value, "a URL of a service account's JWKS with {serviceAccount}")
                guard settings.publicKeys.contains("{serviceAccount}") else {
                    throw value.error("must contain {serviceAccount}: every account publishes its own keys")
                }
            }
            if let value = mapping.optional("oauthToken") { settings.oauthToken = try url(value, "an OAuth 2.0 token endpoint") }
        }
        return settings
    }

    /// A service account's email as IAM names it: `name@project.iam.gserviceaccount.com` (or a Google-managed
    /// account's domain); it goes into URL paths, so nothing else passes.
    private static func serviceAccount(_ node: ConfigNode) throws -> String {
        let text = try node.nonEmptyString()
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789-._")
        guard parts.count == 2, !parts[0].isEmpty, parts[1].contains("."), text.count <= 254,
            text.allSatisfy({ allowed.contains($0) || $0 == "@" })
        else {
            throw node.error("expected a service account's email, such as fleet-consumer@acme.iam.gserviceaccount.com, got '\(text)'")
        }
        return text
    }

    private static func url(_ node: ConfigNode, _ expecting: String) throws -> String {
        let text = try node.nonEmptyString()
        try JWKSURL.checkPolicy(text, at: node, expecting: expecting)
        return text.hasSuffix("/") ? String(text.dropLast()) : text
    }

    /// The signing service accounts, each once, sorted.
    var accounts: [String] { Set(serviceAccounts.values).sorted() }

    /// The JWKS URL of `account`'s public keys.
    func publicKeysURL(of account: String) -> String {
        JWKSURL.serviceAccountKeys(publicKeys, of: account).url
    }
}
