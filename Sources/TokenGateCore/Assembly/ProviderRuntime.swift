import JOSE

/// Everything one provider needs at request time, built by the ``GatewayAssembler``: its settings, its backend and
/// the keys that verify it, its callers and their authorizers, its cache and its limiters.
///
/// A reload builds a new runtime for every provider, but hands on the parts whose configuration did not change
/// (see `ProviderFingerprints`): the backend, keys and cache when the backend's settings are the same, the
/// authenticator (and its session memo) and the authorizers (and their answers) when the clients are, the limiters
/// when the limits are.
package final class ProviderRuntime: Sendable {
    /// The validated settings.
    package let settings: ProviderSettings
    /// The backend its plugin built.
    package let backend: any TokenBackend
    package let keys: ProviderKeys
    /// Contains calls to the backend, per token type: a cap on calls in flight and a circuit breaker.
    let backendGuards: BackendCallGuards
    /// How many mints per second the provider may start (`backend.mintBudget`), or nil for no bound.
    let mintBudget: RateLimiter<Bool>?
    let authenticator: CallerAuthenticator
    let authorizer: ProviderAuthorizer
    package let cache: TokenCache<TokenContext, DeliveredToken>
    /// The header segments its cached tokens share. A new one per generation: tokens a kept cache already holds
    /// keep sharing theirs.
    let tokenHeaders = TokenHeaderSegments()
    let limiters: ProviderLimiters
    /// With shared state: the limits at this replica's share, applied while the store is unreachable.
    let fallbackLimiters: ProviderLimiters?
    let metrics: ProviderMetrics
    let fingerprints: ProviderFingerprints
    /// Fleet Engine's pushed log entries (`events:`), or nil.
    let events: ProviderEvents?
    /// Whether Google still accepts the keys it signs with.
    let keyHealth: SigningKeyHealth
    /// Whether Fleet Engine accepts its tokens, checked every so often (`acceptanceCheck:`), or nil.
    let acceptanceCheck: AcceptanceCheck?

    /// The provider ID.
    package var id: ProviderID { settings.id }

    init(
        settings: ProviderSettings,
        backend: any TokenBackend,
        keys: ProviderKeys,
        backendGuards: BackendCallGuards,
        mintBudget: RateLimiter<Bool>?,
        authenticator: CallerAuthenticator,
        authorizer: ProviderAuthorizer,
        cache: TokenCache<TokenContext, DeliveredToken>,
        limiters: ProviderLimiters,
        fallbackLimiters: ProviderLimiters?,
        metrics: ProviderMetrics,
        fingerprints: ProviderFingerprints,
        events: ProviderEvents?,
        keyHealth: SigningKeyHealth,
        acceptanceCheck: AcceptanceCheck?
    ) {
        self.acceptanceCheck = acceptanceCheck
        self.events = events
        self.keyHealth = keyHealth
        self.metrics = metrics
        self.settings = settings
        self.backend = backend
        self.keys = keys
        self.backendGuards = backendGuards
        self.mintBudget = mintBudget
        self.authenticator = authenticator
        self.authorizer = authorizer
        self.cache = cache
        self.limiters = limiters
        self.fallbackLimiters = fallbackLimiters
        self.fingerprints = fingerprints
    }

    /// The exact check every token of this provider passes before it reaches a client.
    package func verifier() throws(TokenGateError) -> FleetEngineVerifier {
        FleetEngineVerifier(
            keys: try keys.current(),
            audience: settings.audience,
            leeway: settings.leeway,
            minRemaining: settings.cache.minRemaining.components.seconds
        )
    }

    /// Fetches the keys of every JWKS URL this provider uses that has none yet (the command line runs no
    /// refreshers).
    package func fetchMissingKeys() async {
        for set in keys.remoteSets where set.current() == nil { await set.refresh() }
    }
}

/// Digests of what each part of a provider was built from, to tell on reload which parts may be handed on.
struct ProviderFingerprints: Sendable, Equatable {
    /// The backend section with every file it names, the audience, leeway, cache policy and response mapping.
    var backend: [UInt8]
    /// The clients with every key file they name, and the leeway their session tokens are checked with.
    var clients: [UInt8]
    /// The rate limits.
    var limits: [UInt8]
}
