import JOSE
import OpenSSLPrimitives

/// An operator's key for the admin API (`adminKeys:`, global or per provider); the configuration holds only its
/// SHA-256 digest, as for clients' API keys.
package struct AdminKey: Sendable, Equatable {
    /// A unique name, for logs and the audit trail.
    package var name: String
    /// The SHA-256 digest of the key.
    package var digest: [UInt8]

    /// Creates a key entry.
    package init(name: String, digest: [UInt8]) {
        self.name = name
        self.digest = digest
    }

    /// Parses an `adminKeys:` list: `- { name: NAME, keySha256: HEX }`.
    static func parseList(_ node: ConfigNode) throws -> [AdminKey] {
        var keys: [AdminKey] = []
        for entry in try node.sequence() {
            let mapping = try entry.mapping(allowedKeys: ["name", "keySha256"])
            let name = try mapping.required("name").nonEmptyString()
            guard !keys.contains(where: { $0.name == name }) else { throw entry.error("an admin key named '\(name)' is already declared here") }
            let digestNode = try mapping.required("keySha256")
            let hex = try digestNode.string().lowercased()
            guard hex.utf8.count == 64, let digest = HexBytes.decode(hex) else {
                throw digestNode.error("expected the 64 hex characters of the key's SHA-256 digest (tokengate hash-api-key)")
            }
            keys.append(AdminKey(name: name, digest: digest))
        }
        return keys
    }
}

/// Who may call the admin API for a provider: the global admin keys and that provider's own.
package struct AdminAuthenticator: Sendable {
    let global: [AdminKey]
    let perProvider: [ProviderID: [AdminKey]]

    /// The keys of `configuration`.
    package init(_ configuration: GatewayConfiguration) {
        global = configuration.adminKeys
        perProvider = configuration.providers.mapValues(\.adminKeys)
    }

    /// The key `authorization` (`Bearer KEY`) carries, before anything else about the request is looked at (so
    /// an unknown key learns nothing, not even which providers exist). Every digest is compared in constant time
    /// and a match does not end the loop. An unknown key is unauthenticated.
    package func authenticate(_ authorization: String?) throws(TokenGateError) -> AuthenticatedAdmin {
        let credential = try CallerCredential(authorization: authorization)
        guard case .apiKey(let digest) = credential else {
            throw TokenGateError(.unauthenticated, "the admin API takes an admin key, not a session token")
        }
        var name: String?
        var isGlobal = false
        var providers: Set<ProviderID> = []
        for key in global where ConstantTime.isEqual(digest, key.digest) {
            if name == nil { (name, isGlobal) = (key.name, true) }
        }
        for (provider, keys) in perProvider {
            for key in keys where ConstantTime.isEqual(digest, key.digest) {
                if name == nil { name = key.name }
                providers.insert(provider)
            }
        }
        guard let name else { throw TokenGateError(.unauthenticated, "unknown admin key") }
        return AuthenticatedAdmin(name: name, isGlobal: isGlobal, providers: providers)
    }
}

/// An admin key that matched, and where it may act.
package struct AuthenticatedAdmin: Sendable, Equatable {
    /// The key's name, for logs and the audit trail.
    package let name: String
    /// A global key (`adminKeys:` at the top level) acts for every provider.
    package let isGlobal: Bool
    /// The providers whose own `adminKeys:` hold it.
    package let providers: Set<ProviderID>

    /// Whether the key may act for `provider`. A provider key asking about another provider, or about one that
    /// does not exist, is forbidden alike: it learns nothing of the other tenants. A global key is told when a
    /// provider does not exist (its caller checks that next).
    package func authorize(for provider: ProviderID?) throws(TokenGateError) {
        guard isGlobal || provider.map(providers.contains) == true else {
            throw TokenGateError(.forbidden, "an admin key of another provider")
        }
    }
}

/// `endedContexts:`: how long an ended context is refused, and how many are remembered.
package struct EndedContextSettings: Sendable, Equatable {
    /// How long `POST …/end` refuses new tokens for the context, unless lifted sooner. Default 24 h.
    package var refuseFor: Duration = .seconds(86_400)
    /// The most ended contexts remembered (the soonest to expire go first beyond it). Default 100,000.
    package var maxEntries: Int = 100_000

    /// The defaults.
    package init() {}

    static func parse(_ node: ConfigNode) throws -> EndedContextSettings {
        let mapping = try node.mapping(allowedKeys: ["refuseFor", "maxEntries"])
        var settings = EndedContextSettings()
        if let node = mapping.optional("refuseFor") {
            settings.refuseFor = try node.duration()
            guard settings.refuseFor >= .seconds(60), settings.refuseFor <= .seconds(30 * 86_400) else {
                throw node.error("must be between 1m and 30 days")
            }
        }
        if let node = mapping.optional("maxEntries") { settings.maxEntries = try node.int(in: 1...10_000_000) }
        return settings
    }
}
