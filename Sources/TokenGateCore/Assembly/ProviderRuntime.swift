import JOSE

/// Everything one provider needs at request time, built by the ``GatewayAssembler``: its settings, its backend and
/// the keys that verify it, its callers and their authorizers, its cache and its limiters.
///
/// A reload builds a new runtime for every provider, handing on from the previous one each reload unit
/// (``ProviderUnits``) whose configuration did not change (see ``ProviderFingerprints``): the backend with its
/// cache, the clients' authenticator with the authorizers' answers, the limiters' buckets, and the call guards and
/// the mint budget with what they guard. Everything else is made anew by each generation.
package final class ProviderRuntime: Sendable {
    /// The validated settings.
    package let settings: ProviderSettings
    /// What a reload hands on.
    let units: ProviderUnits
    package let keys: ProviderKeys
    /// This generation's clients' authorizers, asked through the clients unit's answers and the authorizer guard.
    let authorizer: ProviderAuthorizer
    /// The header segments its cached tokens share. A new one per generation: tokens a kept cache already holds
    /// keep sharing theirs.
    let tokenHeaders = TokenHeaderSegments()
    /// The limits over the limits unit's buckets.
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
    /// The backend its plugin built.
    package var backend: any TokenBackend { units.backend.parts.backend }
    package var cache: TokenCache<TokenContext, DeliveredToken> { units.backend.parts.cache }
    /// Contains calls to the backend, per token type: a cap on calls in flight and a circuit breaker.
    var backendGuards: BackendCallGuards { units.backendCalls.parts }
    /// How many mints per second the provider may start (`backend.mintBudget`), or nil for no bound.
    var mintBudget: RateLimiter<Bool>? { units.mintBudget.parts }
    var authenticator: CallerAuthenticator { units.clients.parts.authenticator }

    init(
        settings: ProviderSettings,
        fingerprints: ProviderFingerprints,
        units: ProviderUnits,
        keys: ProviderKeys,
        authorizer: ProviderAuthorizer,
        limiters: ProviderLimiters,
        fallbackLimiters: ProviderLimiters?,
        metrics: ProviderMetrics,
        events: ProviderEvents?,
        keyHealth: SigningKeyHealth,
        acceptanceCheck: AcceptanceCheck?
    ) {
        self.acceptanceCheck = acceptanceCheck
        self.events = events
        self.keyHealth = keyHealth
        self.metrics = metrics
        self.settings = settings
        self.units = units
        self.keys = keys
        self.authorizer = authorizer
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

/// Digests of what each part of a provider was built from, to tell on reload which reload units may be handed on.
struct ProviderFingerprints: Sendable, Equatable {
    /// The backend section with every file it names (less the core's keys, `calls`), the audience, leeway and cache
    /// policy.
    var backend: [UInt8]
    /// The clients with every key file they name, and the leeway their session tokens are checked with.
    var clients: [UInt8]
    /// The rate limits.
    var limits: [UInt8]
    /// The core's keys of the backend section: how calls are guarded and the mint budget.
    var calls: [UInt8]
}
