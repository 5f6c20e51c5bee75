/// A group of a provider's parts that a reload keeps or rebuilds as one: handed on (the same instances, their state
/// with them) when it would be built from the same configuration, built anew otherwise. ``handOn(_:builtFrom:build:)``
/// is the one rule.
struct ReloadUnit<Parts: Sendable>: Sendable {
    /// The digests of the configuration the parts were built from (``ProviderFingerprints``).
    let builtFrom: [UInt8]
    /// The parts.
    let parts: Parts

    /// `previous` when it was built from `builtFrom`, else a unit of `build()`'s parts.
    static func handOn(_ previous: Self?, builtFrom: [UInt8], build: () -> Parts) -> Self {
        if let previous, previous.builtFrom == builtFrom { return previous }
        return Self(builtFrom: builtFrom, parts: build())
    }
}

/// What a reload hands on from one of a provider's runtimes to the next, by reload unit: each unit is kept whole
/// while the fingerprints it is built from are unchanged, and rebuilt whole, without touching the others, when one of
/// them changed. A new part whose state must outlive a reload joins the unit its configuration belongs to; the
/// runtime's other parts are made anew by every generation.
struct ProviderUnits: Sendable {
    /// The backend its plugin built and the tokens it minted, from `backend`: a reload that keeps them sets off no
    /// mint storm.
    let backend: ReloadUnit<BackendUnit>
    /// The guard of each token type's backend calls, from `backend` and `calls`: an open circuit stays open across a
    /// reload that changes neither, and a new backend starts closed.
    let backendCalls: ReloadUnit<BackendCallGuards>
    /// How many mints a second the provider may start (nil: no bound), from `calls`: a reload does not hand a
    /// storming tenant a fresh allowance.
    let mintBudget: ReloadUnit<RateLimiter<Bool>?>
    /// The callers' authenticator (with its session memo) and the authorizers' answers so far, from `clients`.
    let clients: ReloadUnit<ClientsUnit>
    /// The guard of the authorizer calls, from `clients` and `calls`.
    let authorizerCalls: ReloadUnit<CallGuard>
    /// The rate limits' token buckets, from `limits`: nobody's allowance resets on reload.
    let limits: ReloadUnit<RateLimitBuckets>

    /// The units of a runtime built from `fingerprints`: each of `previous`'s built from the same fingerprints, the
    /// others built by the closure of their name (`backendCalls` for the backend of this runtime's backend unit).
    init(
        previous: ProviderUnits?,
        fingerprints: ProviderFingerprints,
        backend: () -> BackendUnit,
        backendCalls: (any TokenBackend) -> BackendCallGuards,
        mintBudget: () -> RateLimiter<Bool>?,
        clients: () -> ClientsUnit,
        authorizerCalls: () -> CallGuard,
        limits: () -> RateLimitBuckets
    ) {
        self.backend = .handOn(previous?.backend, builtFrom: fingerprints.backend, build: backend)
        let handedOn = self.backend.parts.backend
        self.backendCalls = .handOn(previous?.backendCalls, builtFrom: fingerprints.backend + fingerprints.calls) { backendCalls(handedOn) }
        self.mintBudget = .handOn(previous?.mintBudget, builtFrom: fingerprints.calls, build: mintBudget)
        self.clients = .handOn(previous?.clients, builtFrom: fingerprints.clients, build: clients)
        self.authorizerCalls = .handOn(previous?.authorizerCalls, builtFrom: fingerprints.clients + fingerprints.calls, build: authorizerCalls)
        self.limits = .handOn(previous?.limits, builtFrom: fingerprints.limits, build: limits)
    }
}

/// The backend reload unit.
struct BackendUnit: Sendable {
    /// The backend its plugin built.
    let backend: any TokenBackend
    /// The tokens it minted.
    let cache: TokenCache<TokenContext, DeliveredToken>
}

/// The clients reload unit.
struct ClientsUnit: Sendable {
    /// Who may call, and their verified session tokens so far (the session memo).
    let authenticator: CallerAuthenticator
    /// The clients' authorizers' answers so far.
    let answers: AuthorizerDecisionCache
}
