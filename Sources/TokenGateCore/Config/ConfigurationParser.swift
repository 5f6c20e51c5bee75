import YAML

/// Turns a parsed `config.yaml` into a validated `GatewayConfiguration`: values only, no running object. Backend
/// sections are left to their plugins, which the ``GatewayAssembler`` runs next; everything else is checked here.
package struct ConfigurationParser: Sendable {
    /// Defaults that `defaults:` may override and each provider may override again.
    struct Defaults {
        var audience = FleetEngineClaims.defaultAudience
        var leeway: Int64 = 60
        var cache = TokenCachePolicy()
        var rateLimits = RateLimitSettings()
    }

    /// Creates a parser.
    package init() {}

    /// Validates the document rooted at `root`. With `only`, every other provider is skipped unread (its `${VAR}`s
    /// need not be set), and `only` must be declared.
    package func parse(_ root: ConfigNode, only: ProviderID? = nil) throws -> GatewayConfiguration {
        var errors = ErrorCollector(collects: false)
        return try parse(root, only: only, errors: &errors)
    }

    /// Validates the document rooted at `root` as a reload does: an included tenant file that does not parse is
    /// left out and its error returned by path (its tenant keeps its last good version); any other error throws.
    package func parseKeepingBrokenTenants(_ root: ConfigNode) throws -> (configuration: GatewayConfiguration, broken: [String: ConfigError]) {
        var errors = ErrorCollector(collects: false, keepsBrokenTenants: true)
        let configuration = try parse(root, only: nil, errors: &errors)
        return (configuration, errors.brokenTenantFiles)
    }

    /// Validates the document rooted at `root` and reports every error it can find, not just the first: a broken
    /// section is skipped and the rest still checked. The configuration holds the providers that parsed.
    package func parseCollectingErrors(_ root: ConfigNode) -> (configuration: GatewayConfiguration?, errors: [ConfigError]) {
        var errors = ErrorCollector(collects: true)
        let configuration = try? parse(root, only: nil, errors: &errors)
        return (configuration, errors.errors)
    }

    /// Where errors go: thrown at once, or collected so parsing can go on with the next section.
    struct ErrorCollector {
        let collects: Bool
        var errors: [ConfigError] = []
        /// Whether an included tenant's error leaves that tenant out (recorded below) instead of failing the whole.
        var keepsBrokenTenants = false
        var brokenTenantFiles: [String: ConfigError] = [:]

        /// Runs `body` for the tenant of the file at `path` (nil: written inline).
        mutating func attempt<T>(tenantFile path: String?, _ body: () throws -> T) throws -> T? {
            guard keepsBrokenTenants, let path else { return try attempt(body) }
            do {
                return try body()
            } catch let error as ConfigError {
                brokenTenantFiles[path] = error
                return nil
            }
        }

        /// Runs `body`; a `ConfigError` is thrown on, or collected and nil returned.
        @discardableResult
        mutating func attempt<T>(_ body: () throws -> T) throws -> T? {
            do {
                return try body()
            } catch let error as ConfigError where collects {
                errors.append(error)
                return nil
            }
        }
    }

    /// The sections `config.yaml` may have at its top level.
    static let topLevelKeys: Set<String> = ["server", "defaults", "audit", "adminKeys", "endedContexts", "sharedState", "tracing", "providers"]

    private func parse(_ root: ConfigNode, only: ProviderID?, errors: inout ErrorCollector) throws -> GatewayConfiguration {
        let document = try root.mapping(allowedKeys: Self.topLevelKeys)
        var server = ServerSettings()
        if let node = document.optional("server"), let parsed = try errors.attempt({ try parseServer(node) }) { server = parsed }
        var audit: AuditSettings?
        if let node = document.optional("audit") { audit = try errors.attempt { try AuditSettings.parse(node) } }
        var adminKeys: [AdminKey] = []
        if let node = document.optional("adminKeys") { adminKeys = try errors.attempt { try AdminKey.parseList(node) } ?? [] }
        var endedContexts = EndedContextSettings()
        if let node = document.optional("endedContexts"), let parsed = try errors.attempt({ try EndedContextSettings.parse(node) }) {
            endedContexts = parsed
        }
        var sharedState: SharedStateSettings?
        if let node = document.optional("sharedState") { sharedState = try errors.attempt { try SharedStateSettings.parse(node) } }
        var tracing: TracingSettings?
        if let node = document.optional("tracing") { tracing = try errors.attempt { try TracingSettings.parse(node) } }
        var defaults = Defaults()
        if let node = document.optional("defaults") {
            // A broken defaults section is reported; the providers are still checked, over the built-in defaults.
            defaults =
                try errors.attempt {
                    try parseOverrides(node.mapping(allowedKeys: ["audience", "leeway", "cache", "rateLimits"]), over: Defaults())
                } ?? Defaults()
        }
        let providersNode = try document.required("providers")
        let (entries, included) = try providerEntries(providersNode, errors: &errors)
        if let only, !entries.contains(where: { $0.key == only.rawValue }) {
            let known = entries.map(\.key).sorted().joined(separator: ", ")
            throw providersNode.error("no provider '\(only)'; it declares: \(known)")
        }
        var providers: [ProviderID: ProviderSettings] = [:]
        var providerFiles: [ProviderID: String] = [:]
        for (key, node, path) in entries where only == nil || key == only?.rawValue {
            let parsed = try errors.attempt(tenantFile: path) { () throws -> ProviderSettings in
                guard let id = ProviderID(key) else {
                    throw node.keyError(
                        "'\(key)' is not a Google Cloud project ID (6-30 lower-case letters, digits and hyphens, starting with a letter)")
                }
                guard providers[id] == nil else {
                    throw node.keyError("provider \(id) is declared twice (also in \(providerFiles[id] ?? node.file.displayPath))")
                }
                return try parseProvider(id, node, defaults: defaults)
            }
            guard let parsed else { continue }
            providers[parsed.id] = parsed
            providerFiles[parsed.id] = path
        }
        // When every provider failed, their errors say why; "declare one" would only mislead.
        guard !providers.isEmpty || !errors.errors.isEmpty || !errors.brokenTenantFiles.isEmpty else {
            throw providersNode.error("declare at least one provider")
        }
        if only == nil {
            try errors.attempt { try checkRequiredProviders(server, declared: Set(entries.map(\.key)), serverNode: document.optional("server")) }
        }
        warnIfPeersShareAProxysAddress(server, providers: providers, serverNode: document.optional("server"), root: root)
        var configuration = GatewayConfiguration(
            server: server, providers: providers, audit: audit, adminKeys: adminKeys, endedContexts: endedContexts,
            sharedState: sharedState, tracing: tracing)
        configuration.providerFiles = providerFiles
        configuration.includedFiles = included
        return configuration
    }

    /// Every provider `server.readiness.requireProviders` names must be declared (inline or in a tenant file, even one
    /// that is broken now: its tenant is then not served, which the readiness says).
    private func checkRequiredProviders(_ server: ServerSettings, declared: Set<String>, serverNode: ConfigNode?) throws {
        guard !server.readiness.requireProviders.isEmpty,
            let readiness = try serverNode?.mapping(allowedKeys: ServerSettings.keys).optional("readiness"),
            let list = try readiness.mapping(allowedKeys: ["requireProviders", "startTimeout"]).optional("requireProviders")
        else { return }
        for entry in try list.sequence() where !declared.contains(try entry.string()) {
            throw entry.error("no provider '\(try entry.string())' is declared; requireProviders names providers of this configuration")
        }
    }

    /// The entries of `providers:`, inline ones first, then those of each included tenant file (with its path);
    /// and the included files as read. A file that cannot be read is a located error (collected per file).
    private func providerEntries(
        _ providersNode: ConfigNode, errors: inout ErrorCollector
    ) throws -> (entries: [(key: String, node: ConfigNode, path: String?)], files: [TenantFiles.File]) {
        var entries: [(key: String, node: ConfigNode, path: String?)] = []
        var includes: [ConfigNode] = []
        for (key, node) in try providersNode.entries() {
            if TenantFiles.isInclude(key, node) { includes.append(node) } else { entries.append((key, node, nil)) }
        }
        var files: [TenantFiles.File] = []
        for include in includes {
            for path in try TenantFiles.paths(include) {
                guard let (file, key, node) = try errors.attempt(tenantFile: path, { try TenantFiles.read(path, like: include.file) }) else {
                    continue
                }
                files.append(file)
                entries.append((key, node, path))
            }
        }
        return (entries, files)
    }

    /// A listener reachable from other hosts is usually behind a load balancer; without `trustedProxies` every
    /// caller then has the balancer's address, and one caller's failed keys count against all of them.
    private func warnIfPeersShareAProxysAddress(
        _ server: ServerSettings, providers: [ProviderID: ProviderSettings], serverNode: ConfigNode?, root: ConfigNode
    ) {
        guard server.trustedProxies == nil, !Self.isLoopback(server.host) else { return }
        let limited = providers.values.filter { $0.rateLimits.failedAuthPerPeer != nil }.map(\.id.rawValue).sorted()
        guard !limited.isEmpty else { return }
        let node = (try? serverNode?.mapping(allowedKeys: ServerSettings.keys).optional("host")) ?? serverNode ?? root
        node.warn(
            "the listener is not on loopback and failedAuthPerPeer is on (\(limited.joined(separator: ", "))) without "
                + "server.trustedProxies: behind a load balancer or proxy every caller has its address, so one caller's "
                + "failed credentials count against all; list the proxies in server.trustedProxies")
    }

    /// Whether `host` names a loopback address (`127.0.0.0/8`, `::1`, `localhost`).
    static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" { return true }
        guard let address = PeerAddress(parsing: host) else { return false }
        return address.isIPv6 ? address.bits == 1 : address.bits >> 24 == 127
    }

    private func parseServer(_ node: ConfigNode) throws -> ServerSettings {
        try ServerSettings.parse(node)
    }

    private func parseProvider(_ id: ProviderID, _ node: ConfigNode, defaults: Defaults) throws -> ProviderSettings {
        let mapping = try node.mapping(allowedKeys: [
            "audience", "leeway", "cache", "rateLimits", "backend", "clients", "response", "cors", "compatibility", "adminKeys",
            "events", "keyHealth", "acceptanceCheck",
        ])
        let settings = try parseOverrides(mapping, over: defaults)
        let backend = try mapping.required("backend")
        // The plugin validates the rest of the section; only `type` is the core's, to pick the plugin.
        guard let typeNode = try backend.entries().first(where: { $0.key == "type" })?.node else {
            throw backend.error("missing required key 'type'")
        }
        let clientsNode = try mapping.required("clients")
        var clients: [ClientConfig] = []
        for clientNode in try clientsNode.sequence() {
            let client = try ClientConfig.parse(clientNode, leeway: settings.leeway)
            if clients.contains(where: { $0.name == client.name }) {
                throw clientNode.error("a client named '\(client.name)' is already declared for this provider")
            }
            clients.append(client)
        }
        guard !clients.isEmpty else {
            throw clientsNode.error("declare at least one client: TokenGate never vends tokens anonymously")
        }
        var provider = ProviderSettings(
            id: id,
            audience: settings.audience,
            leeway: settings.leeway,
            cache: settings.cache,
            rateLimits: settings.rateLimits,
            clients: clients,
            response: try mapping.optional("response").map(ResponseMapping.parse),
            cors: try mapping.optional("cors").map(CORSPolicy.parse),
            answersGoogleSampleRoutes: try mapping.optional("compatibility").map(Self.parseCompatibility) ?? false,
            adminKeys: try mapping.optional("adminKeys").map(AdminKey.parseList) ?? [],
            events: try mapping.optional("events").map(FleetEventSettings.parse),
            backendType: try typeNode.nonEmptyString(),
            backendSection: backend.removing(BackendGuardSettings.keys),
            backendGuard: try BackendGuardSettings.parse(backend: backend),
            clientsSection: clientsNode
        )
        if let node = mapping.optional("keyHealth") { provider.keyHealth = try KeyHealthSettings.parse(node) }
        if let node = mapping.optional("acceptanceCheck") {
            provider.acceptanceCheck = try AcceptanceCheckSettings.parse(node)
            provider.acceptanceCheckSection = node
        }
        return provider
    }

    /// `compatibility: google-samples`, the one drop-in set of routes there is.
    private static func parseCompatibility(_ node: ConfigNode) throws -> Bool {
        guard try node.string() == "google-samples" else {
            throw node.error("expected google-samples (the routes of Google's sample token servers)")
        }
        return true
    }

    private func parseOverrides(_ mapping: ConfigMapping, over defaults: Defaults) throws -> Defaults {
        var result = defaults
        if let node = mapping.optional("audience") { result.audience = try node.nonEmptyString() }
        if let node = mapping.optional("leeway") {
            result.leeway = ConfigDuration.seconds(try node.duration())
            guard (0...600).contains(result.leeway) else { throw node.error("must be between 0s and 10m") }
        }
        if let node = mapping.optional("cache") { result.cache = try parseCache(node, over: result.cache) }
        if let node = mapping.optional("rateLimits") {
            result.rateLimits = try parseRateLimits(node, over: result.rateLimits)
        }
        return result
    }

    private func parseCache(_ node: ConfigNode, over defaults: TokenCachePolicy) throws -> TokenCachePolicy {
        let mapping = try node.mapping(allowedKeys: ["minRemaining", "refreshBefore", "maxEntries", "staleIfErrorFloor"])
        var cache = defaults
        if let value = mapping.optional("minRemaining") { cache.minRemaining = try value.duration() }
        if let value = mapping.optional("refreshBefore") { cache.refreshBefore = try value.duration() }
        if let value = mapping.optional("maxEntries") { cache.maxEntries = try value.int(in: 1...10_000_000) }
        if let value = mapping.optional("staleIfErrorFloor") {
            cache.staleIfErrorFloor = try value.duration()
            guard cache.staleIfErrorFloor >= .seconds(10), cache.staleIfErrorFloor <= cache.minRemaining else {
                throw value.error("must be between 10s and minRemaining (\(cache.minRemaining)); equal to minRemaining switches it off")
            }
        }
        guard cache.refreshBefore > cache.minRemaining else {
            throw node.error("refreshBefore (\(cache.refreshBefore)) must be longer than minRemaining (\(cache.minRemaining))")
        }
        guard cache.refreshBefore < .seconds(FleetEngineClaims.maxLifetime) else {
            throw node.error("refreshBefore must be shorter than a token's one-hour lifetime")
        }
        return cache
    }

    private func parseRateLimits(_ node: ConfigNode, over defaults: RateLimitSettings) throws -> RateLimitSettings {
        let mapping = try node.mapping(allowedKeys: ["provider", "caller", "context", "failedAuth", "failedAuthPerPeer", "distinctContexts"])
        var limits = defaults
        if let value = mapping.optional("provider") { limits.provider = try parseRateLimit(value) }
        if let value = mapping.optional("caller") { limits.caller = try parseRateLimit(value) }
        if let value = mapping.optional("context") { limits.context = try parseRateLimit(value) }
        if let value = mapping.optional("failedAuth") { limits.failedAuth = try parseRateLimit(value) }
        if let value = mapping.optional("failedAuthPerPeer") { limits.failedAuthPerPeer = try parseRateLimit(value) }
        if let value = mapping.optional("distinctContexts") { limits.distinctContexts = try parseDistinctContexts(value) }
        return limits
    }

    /// `{ perCaller: 200/1h, perType: { consumer: 50/1h }, shadow: false }`; at least one cap.
    private func parseDistinctContexts(_ node: ConfigNode) throws -> DistinctContextLimits {
        let mapping = try node.mapping(allowedKeys: ["perCaller", "perType", "shadow"])
        func cap(_ node: ConfigNode) throws -> DistinctContextLimits.Cap {
            let text = try node.string()
            guard let limit = RateLimit(parsing: text), limit.count <= 1_000_000 else {
                throw node.error("expected a number of contexts per window such as 200/h, 1000/min or 50/s (at most 1000000), got '\(text)'")
            }
            return DistinctContextLimits.Cap(count: limit.count, windowSeconds: limit.period.components.seconds)
        }
        var perType: [TokenType: DistinctContextLimits.Cap] = [:]
        if let node = mapping.optional("perType") {
            for (name, value) in try node.entries() {
                guard let type = TokenType(rawValue: name) else {
                    let types = TokenType.allCases.map(\.rawValue).joined(separator: ", ")
                    throw value.keyError("'\(name)' is not a token type; expected one of: \(types)")
                }
                perType[type] = try cap(value)
            }
        }
        let limits = DistinctContextLimits(
            perCaller: try mapping.optional("perCaller").map(cap), perType: perType, shadow: try mapping.optional("shadow")?.bool() ?? false)
        guard limits.perCaller != nil || !limits.perType.isEmpty else {
            throw node.error("distinctContexts needs perCaller or perType")
        }
        return limits
    }

    /// `{ rate: 600/min, burst: 50 }`, and `shadow: true` to count and log what it would refuse without refusing.
    private func parseRateLimit(_ node: ConfigNode) throws -> RateLimit {
        let mapping = try node.mapping(allowedKeys: ["rate", "burst", "shadow"])
        let shadow = try mapping.optional("shadow")?.bool() ?? false
        let rateNode = try mapping.required("rate")
        let burst = try mapping.optional("burst")?.int(in: 1...1_000_000) ?? 1
        let text = try rateNode.string()
        guard let limit = RateLimit(parsing: text, burst: burst) else {
            throw rateNode.error("expected a rate such as 600/min, 10/s or 5000/h, got '\(text)'")
        }
        return limit.shadow(shadow)
    }
}
