import Foundation
import JOSE
package import Logging
import OpenSSLPrimitives

/// The one place running objects are made: turns a configuration file into a ``GatewayGeneration``.
///
/// In order: the configuration is parsed into values; a ``KeySetDirectory`` gets one key set per distinct JWKS URL
/// (the previous generation's set where it had the URL); each provider's backend is built by its plugin; then each
/// provider's runtime (keys, authenticator, cache, limiters), handing on from `previous` every reload unit whose
/// configuration did not change (``ProviderUnits``); then the api-key ownership map. Nothing is started: the generation's
/// ``GatewayGeneration/services`` run only when `serve` (or a reload) runs them. Any error leaves nothing behind.
package struct GatewayAssembler: Sendable {
    /// The plugins.
    package var registry: BackendRegistry
    /// Where `${NAME}` values come from.
    package var environment: [String: String]
    /// Time for caches, limiters, backends and key sets.
    package var clock: TokenGateClock
    /// Where backends and key sets log.
    package var logger: Logger
    /// How key sets fetch their JWKS (AsyncHTTPClient in `serve`; tests bring their own).
    package var jwksFetcher: any JWKSFetcher
    /// How clients' authorizers are asked (AsyncHTTPClient in `serve`). Without one, every authorizer question
    /// fails: such a client is refused `authorizer_unavailable`, never allowed.
    package var authorizerTransport: any AuthorizerTransport
    /// How acceptance checks call Fleet Engine (AsyncHTTPClient in `serve`). Without one, a configured check
    /// reports no verdict.
    package var fleetEngineTransport: any FleetEngineTransport
    /// How many verified session tokens each provider remembers.
    package var sessionMemoLimit: Int
    /// The instruments every generation it builds counts with.
    package var metrics: GatewayMetrics

    /// Creates an assembler.
    package init(
        registry: BackendRegistry,
        environment: [String: String],
        clock: TokenGateClock = .system,
        logger: Logger,
        jwksFetcher: any JWKSFetcher,
        authorizerTransport: (any AuthorizerTransport)? = nil,
        fleetEngineTransport: (any FleetEngineTransport)? = nil,
        sessionMemoLimit: Int = 100_000,
        metrics: GatewayMetrics = GatewayMetrics()
    ) {
        self.authorizerTransport = authorizerTransport ?? UnavailableAuthorizerTransport()
        self.fleetEngineTransport = fleetEngineTransport ?? UnavailableFleetEngineTransport()
        self.metrics = metrics
        self.registry = registry
        self.environment = environment
        self.clock = clock
        self.logger = logger
        self.jwksFetcher = jwksFetcher
        self.sessionMemoLimit = sessionMemoLimit
    }

    /// Builds the generation of the file at `path` (named in errors as given). With `only`, just that provider is
    /// parsed and built, so another tenant's unset `${VAR}` cannot stop a command about this one.
    package func build(path: String, previous: GatewayGeneration? = nil, only: ProviderID? = nil) async throws -> GatewayGeneration {
        guard let data = FileManager.default.contents(atPath: path) else {
            let reason = FileManager.default.fileExists(atPath: path) ? "cannot read the file" : "no such file"
            throw ConfigError(file: path, mark: nil, keyPath: "", message: reason)
        }
        return try await build(bytes: [UInt8](data), file: ConfigFile(path: path, environment: environment), previous: previous, only: only)
    }

    /// What `serve` needs from the file before anything is built: the `server:` section for its logging, the
    /// `tracing:` section for spans (set up before the HTTP clients that propagate them). One parse for both; the
    /// assembly that follows reports what is broken.
    package struct StartSettings: Sendable {
        /// nil when the `server:` section is broken; the defaults when there is none or the file does not parse.
        package var server: ServerSettings?
        /// nil when there is no `tracing:` section, or when the file or the section is broken.
        package var tracing: TracingSettings?
    }

    /// The ``StartSettings`` of the file at `path`.
    package static func startSettings(path: String, environment: [String: String]) -> StartSettings {
        guard let data = FileManager.default.contents(atPath: path),
            let root = try? ConfigNode.parse([UInt8](data), file: ConfigFile(path: path, environment: environment)),
            let sections = try? root.mapping(allowedKeys: ConfigurationParser.topLevelKeys)
        else { return StartSettings(server: ServerSettings(), tracing: nil) }
        return StartSettings(
            server: sections.optional("server").map { try? ServerSettings.parse($0) } ?? ServerSettings(),
            tracing: sections.optional("tracing").flatMap { try? TracingSettings.parse($0) })
    }

    /// What `check-config` reports: every error it could find (not just the first), every warning, and the
    /// generation when there was no error.
    package struct Check: Sendable {
        /// Every error, in the order found.
        package var errors: [ConfigError]
        /// Every warning, in the order found.
        package var warnings: [ConfigError]
        /// The generation, when there was no error.
        package var generation: GatewayGeneration?
    }

    /// Parses and builds the file at `path` as `serve` would, but goes on past an error to find the others: a
    /// broken provider is skipped and the rest still built. Starts nothing.
    package func check(path: String) async -> Check {
        let diagnostics = ConfigDiagnostics()
        guard let data = FileManager.default.contents(atPath: path) else {
            let reason = FileManager.default.fileExists(atPath: path) ? "cannot read the file" : "no such file"
            return Check(errors: [ConfigError(file: path, mark: nil, keyPath: "", message: reason)], warnings: [], generation: nil)
        }
        let bytes = [UInt8](data)
        let file = ConfigFile(path: path, environment: environment, diagnostics: diagnostics)
        let root: ConfigNode
        do {
            root = try ConfigNode.parse(bytes, file: file)
        } catch {
            return Check(errors: [error], warnings: [], generation: nil)
        }
        let (parsed, parseErrors) = ConfigurationParser().parseCollectingErrors(root)
        var errors = parseErrors
        guard let configuration = parsed else {
            return Check(errors: errors, warnings: diagnostics.all, generation: nil)
        }
        var keySets = KeySetDirectory.Builder(previous: nil, fetcher: jwksFetcher, clock: clock, logger: logger, metrics: metrics)
        var providers: [ProviderID: ProviderRuntime] = [:]
        for (id, settings) in configuration.providers.sorted(by: { $0.key < $1.key }) {
            do {
                providers[id] = try await makeRuntime(
                    settings, keySets: &keySets, previous: nil, replicas: configuration.sharedState?.replicas)
            } catch let error as ConfigError {
                errors.append(error)
            } catch {
                errors.append(settings.backendSection.error("\(error)"))
            }
        }
        let owners = Self.apiKeyOwners(providers)
        guard errors.isEmpty else { return Check(errors: errors, warnings: diagnostics.all, generation: nil) }
        let generation = GatewayGeneration(
            number: 1,
            configurationDigest: HexBytes.encode((try? Digest.sha256(bytes)) ?? []),
            configuration: configuration,
            providers: providers,
            keySets: keySets.build(),
            apiKeyOwners: owners,
            metrics: metrics
        )
        return Check(errors: [], warnings: diagnostics.all, generation: generation)
    }

    /// Builds the generation of configuration text that came from `file`.
    ///
    /// With a `previous` generation (a reload), a tenant file (`providers: { include: … }`) that does not parse or
    /// build leaves its tenant on the previous generation's runtime, as it was, and says so in
    /// ``GatewayGeneration/staleTenants``; anything else that fails fails the whole build.
    package func build(
        bytes: [UInt8], file: ConfigFile, previous: GatewayGeneration? = nil, only: ProviderID? = nil
    ) async throws -> GatewayGeneration {
        let root = try ConfigNode.parse(bytes, file: file)
        var configuration: GatewayConfiguration
        var broken: [String: ConfigError] = [:]
        if previous != nil, only == nil {
            (configuration, broken) = try ConfigurationParser().parseKeepingBrokenTenants(root)
        } else {
            configuration = try ConfigurationParser().parse(root, only: only)
        }
        var keySets = KeySetDirectory.Builder(
            previous: previous?.keySets, fetcher: jwksFetcher, clock: clock, logger: logger, metrics: metrics)
        var providers: [ProviderID: ProviderRuntime] = [:]
        for (id, settings) in configuration.providers.sorted(by: { $0.key < $1.key }) {
            do {
                providers[id] = try await makeRuntime(
                    settings, keySets: &keySets, previous: previous?.providers[id], replicas: configuration.sharedState?.replicas)
            } catch  where previous != nil && configuration.providerFiles[id] != nil {
                broken[configuration.providerFiles[id]!] = error as? ConfigError ?? settings.backendSection.error("\(error)")
                configuration.providers[id] = nil
                configuration.providerFiles[id] = nil
            }
        }
        var stale: [ProviderID: ConfigError] = [:]
        if let previous {
            for (id, path) in previous.configuration.providerFiles.sorted(by: { $0.key < $1.key }) {
                guard let error = broken[path], configuration.providers[id] == nil, let kept = previous.providers[id] else { continue }
                providers[id] = kept
                configuration.providers[id] = kept.settings
                configuration.providerFiles[id] = path
                stale[id] = error
                // Its key sets stay in the directory, refreshed as before.
                let sets = kept.keys.remoteSets + kept.authenticator.remoteKeySets + (kept.events.map { [$0.keySet] } ?? [])
                for set in sets { _ = keySets.keySet(for: set.url) }
            }
        }
        let included: [UInt8] = configuration.includedFiles.flatMap { file -> [UInt8] in Array(file.path.utf8) + [0] + file.bytes }
        return GatewayGeneration(
            number: (previous?.number ?? 0) + 1,
            configurationDigest: HexBytes.encode(try Digest.sha256(bytes + included)),
            configuration: configuration,
            providers: providers,
            keySets: keySets.build(),
            apiKeyOwners: Self.apiKeyOwners(providers),
            metrics: metrics,
            warnings: file.diagnostics.all,
            staleTenants: stale,
            brokenTenantFiles: broken
        )
    }

    /// Which providers' api-key clients hold each digest (revoked clients left out). A key two tenants accept is
    /// a located warning: its holder could take either tenant's tokens, and a 401/403 answer cannot name its owner.
    private static func apiKeyOwners(_ providers: [ProviderID: ProviderRuntime]) -> [[UInt8]: [ProviderID]] {
        var owners: [[UInt8]: [ProviderID]] = [:]
        for (id, runtime) in providers.sorted(by: { $0.key < $1.key }) {
            let clients = try? runtime.settings.clientsSection.sequence()
            for (index, client) in runtime.settings.clients.enumerated() where !client.isRevoked {
                guard case .apiKey(let digest) = client.credential else { continue }
                if let first = owners[digest]?.first, let node = clients?[index] {
                    node.warn("the same API key is accepted by provider \(first) too; give each tenant its own key")
                }
                owners[digest, default: []].append(id)
            }
        }
        return owners
    }

    private func makeRuntime(
        _ settings: ProviderSettings, keySets: inout KeySetDirectory.Builder, previous: ProviderRuntime?, replicas: Int?
    ) async throws -> ProviderRuntime {
        var logger = logger
        logger[metadataKey: "provider"] = "\(settings.id)"
        let built = try await makeBackend(settings, logger: logger)
        try Self.checkLifetimes(of: built, against: settings)
        try Self.checkAcceptanceTypes(of: built, against: settings)
        let fingerprints = try ProviderFingerprints(settings)
        // Built even when an old one is kept, so its key URLs are registered with this generation's directory.
        let authenticator = CallerAuthenticator(
            provider: settings.id, clients: settings.clients, clock: clock,
            keySet: { keySets.keySet(for: $0) }, sessionMemoLimit: sessionMemoLimit)
        let hasAuthorizer = settings.clients.contains { $0.authorizer != nil }
        // What a reload hands on, unit by unit: the rules are ProviderUnits', the closures build what is not kept.
        let units = ProviderUnits(
            previous: previous?.units, fingerprints: fingerprints,
            backend: { BackendUnit(backend: built, cache: TokenCache(policy: Self.cachePolicy(settings.cache, replicas: replicas), clock: clock)) },
            backendCalls: { backend in
                BackendCallGuards(
                    byType: Dictionary(uniqueKeysWithValues: backend.tokenTypes.map { ($0, makeGuard(.backend, settings, tokenType: $0)) }))
            },
            mintBudget: { settings.backendGuard.mintBudget.map { RateLimiter<Bool>(limit: $0, maxKeys: 1, clock: clock) } },
            clients: { ClientsUnit(authenticator: authenticator, answers: AuthorizerDecisionCache(clock: clock)) },
            authorizerCalls: { makeGuard(.authorizer, settings, counted: hasAuthorizer) },
            limits: { RateLimitBuckets(settings.rateLimits, clock: clock) })
        let backend = units.backend.parts.backend
        let metrics = metrics.provider(settings.id, tokenTypes: backend.tokenTypes, hasAuthorizer: hasAuthorizer)
        let keys = ProviderKeys(
            parts: backend.verificationKeys.map { bound in
                switch bound.source {
                case .fixed(let set): .fixed(set, serviceAccount: bound.serviceAccount)
                case .url(let url): .remote(keySets.keySet(for: url), serviceAccount: bound.serviceAccount)
                }
            }
        )
        let authorizer = ProviderAuthorizer(
            provider: settings.id, clients: settings.clients, transport: authorizerTransport, metrics: metrics,
            answers: units.clients.parts.answers, guard: units.authorizerCalls.parts)
        let refusalLog = RateLimitRefusalLog(logger: logger, clock: clock)
        return ProviderRuntime(
            settings: settings,
            fingerprints: fingerprints,
            units: units,
            keys: keys,
            authorizer: authorizer,
            limiters: ProviderLimiters(id: settings.id, buckets: units.limits.parts, metrics: metrics, refusalLog: refusalLog),
            // This replica's share, for while the shared store is unreachable (and for shadow limits).
            fallbackLimiters: replicas.map {
                ProviderLimiters(
                    id: settings.id, buckets: RateLimitBuckets(settings.rateLimits.share(of: $0), clock: clock), metrics: metrics,
                    refusalLog: refusalLog)
            },
            metrics: metrics,
            events: settings.events.map { ProviderEvents(settings: $0, keySet: keySets.keySet(for: $0.keysURL)) },
            keyHealth: SigningKeyHealth(
                provider: settings.id, keys: backend.signingKeys, settings: settings.keyHealth, clock: clock, factory: self.metrics.factory,
                keySet: { keySets.keySet(for: $0) }),
            acceptanceCheck: settings.acceptanceCheck.map { AcceptanceCheck(settings: $0, transport: fleetEngineTransport) }
        )
    }

    /// `counted`: whether the guard's instruments are made (no authorizer, no authorizer series).
    private func makeGuard(
        _ kind: CallGuard.CallKind, _ settings: ProviderSettings, tokenType: TokenType? = nil, counted: Bool = true
    ) -> CallGuard {
        CallGuard(
            kind, settings: settings.backendGuard, clock: clock,
            metrics: counted ? metrics.guardMetrics(settings.id, call: kind, tokenType: tokenType) : .none)
    }

    /// A token must outlive the cache's `minRemaining` to be served at all, and should outlive `refreshBefore`, or
    /// every hit refreshes it.
    private static func checkLifetimes(of backend: any TokenBackend, against settings: ProviderSettings) throws {
        guard let lifetimes = backend.tokenLifetimes else { return }
        let node = (try? settings.backendSection.entries())?.first { $0.key == "tokenLifetime" }?.node ?? settings.backendSection
        let minRemaining = TokenGateClock.secondsRoundingUp(settings.cache.minRemaining)
        let refreshBefore = TokenGateClock.secondsRoundingUp(settings.cache.refreshBefore)
        for type in backend.tokenTypes.sorted() {
            let lifetime = lifetimes.seconds(for: type)
            if lifetime <= minRemaining {
                throw node.error(
                    "\(type) tokens would live \(TokenLifetimes.text(lifetime)), no longer than cache.minRemaining "
                        + "(\(TokenLifetimes.text(minRemaining))): none could be served")
            }
            if lifetime <= refreshBefore {
                node.warn(
                    "\(type) tokens live \(TokenLifetimes.text(lifetime)), no longer than cache.refreshBefore "
                        + "(\(TokenLifetimes.text(refreshBefore))): every hit refreshes them")
            }
        }
    }

    /// An acceptance check mints each type it checks: the backend must issue them.
    private static func checkAcceptanceTypes(of backend: any TokenBackend, against settings: ProviderSettings) throws {
        guard let check = settings.acceptanceCheck, let section = settings.acceptanceCheckSection else { return }
        let missing = check.tokenTypes.filter { !backend.tokenTypes.contains($0) }
        guard !missing.isEmpty else { return }
        let node = (try? section.entries())?.first { $0.key == "tokenTypes" }?.node ?? section
        throw node.error(
            "the backend does not issue \(missing.map(\.rawValue).joined(separator: ", ")) tokens; it issues "
                + backend.tokenTypes.sorted().map(\.rawValue).joined(separator: ", "))
    }

    /// The configured policy; with shared state, each entry's refresh-ahead starts at a random point of the first
    /// half of the refresh window, so one replica refreshes a token and the others read its result.
    static func cachePolicy(_ configured: TokenCachePolicy, replicas: Int?) -> TokenCachePolicy {
        guard replicas != nil else { return configured }
        var policy = configured
        policy.refreshJitter = (configured.refreshBefore - configured.minRemaining) / 2
        return policy
    }

    private func makeBackend(_ settings: ProviderSettings, logger: Logger) async throws -> any TokenBackend {
        guard let factory = registry.factory(for: settings.backendType) else {
            let typeNode = try settings.backendSection.entries().first { $0.key == "type" }?.node
            throw (typeNode ?? settings.backendSection).error(
                "unknown backend type '\(settings.backendType)'; this build has: \(registry.types.joined(separator: ", "))"
            )
        }
        let context = BackendContext(
            provider: settings.id,
            section: settings.backendSection,
            audience: settings.audience,
            leeway: settings.leeway,
            clock: clock,
            logger: logger,
            metrics: BackendMetrics(provider: settings.id, factory: metrics.factory)
        )
        return try await factory.makeBackend(context)
    }
}

extension ProviderFingerprints {
    /// Fingerprints of `settings`, files named in its sections included; taken after the backend was built, so a
    /// key file it generated counts from the first generation on.
    init(_ settings: ProviderSettings) throws {
        // Not the response mapping: the cache holds tokens, not bodies, so a new body shape keeps them.
        var backend = settings.backendSection.fingerprintText()
        backend += "|\(settings.audience)|\(settings.leeway)|\(settings.cache)"
        var clients = settings.clientsSection.fingerprintText()
        clients += "|\(settings.leeway)"
        self.init(
            backend: try Digest.sha256(Array(backend.utf8)),
            clients: try Digest.sha256(Array(clients.utf8)),
            limits: try Digest.sha256(Array(Self.everyField(of: settings.rateLimits).utf8)),
            calls: try Digest.sha256(Array(Self.everyField(of: settings.backendGuard).utf8))
        )
    }

    /// Every stored field of `value`, by reflection: a field added later changes the fingerprint without anyone
    /// remembering to add it to a description.
    private static func everyField(of value: some Any) -> String {
        var text = ""
        dump(value, to: &text)
        return text
    }
}
