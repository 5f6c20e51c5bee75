import JOSE

/// An operator's key for the admin API (`adminKeys:`, global or per provider); the configuration holds only its
/// SHA-256 digest, as for clients' API keys.
public struct AdminKey: Sendable, Equatable {
    /// A unique name, for logs and the audit trail.
    public var name: String
    /// The SHA-256 digest of the key.
    public var digest: [UInt8]

    /// Creates a key entry.
    public init(name: String, digest: [UInt8]) {
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
public struct AdminAuthenticator: Sendable {
    let global: [AdminKey]
    let perProvider: [ProviderID: [AdminKey]]

    /// The keys of `configuration`.
    public init(_ configuration: GatewayConfiguration) {
        global = configuration.adminKeys
        perProvider = configuration.providers.mapValues(\.adminKeys)
    }

    /// The name of the key `authorization` (`Bearer KEY`) carries, if it may act for `provider`. Every digest is
    /// compared in constant time and a match does not end the loop. A key of another provider is forbidden, an
    /// unknown one unauthenticated.
    public func authenticate(_ authorization: String?, for provider: ProviderID) throws(TokenGateError) -> String {
        let credential = try CallerCredential(authorization: authorization)
        guard case .apiKey(let digest) = credential else {
            throw TokenGateError(.unauthenticated, "the admin API takes an admin key, not a session token")
        }
        var allowed: String?
        var elsewhere = false
        for key in global + (perProvider[provider] ?? []) where ConstantTime.isEqual(digest, key.digest) {
            if allowed == nil { allowed = key.name }
        }
        for (other, keys) in perProvider where other != provider {
            for key in keys where ConstantTime.isEqual(digest, key.digest) { elsewhere = true }
        }
        if let allowed { return allowed }
        if elsewhere { throw TokenGateError(.forbidden, "an admin key of another provider") }
        throw TokenGateError(.unauthenticated, "unknown admin key")
    }
}

/// `endedContexts:`: how long an ended context is refused, and how many are remembered.
public struct EndedContextSettings: Sendable, Equatable {
    /// How long `POST …/end` refuses new tokens for the context, unless lifted sooner. Default 24 h.
    public var refuseFor: Duration = .seconds(86_400)
    /// The most ended contexts remembered (the soonest to expire go first beyond it). Default 100,000.
    public var maxEntries: Int = 100_000

    /// The defaults.
    public init() {}

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
