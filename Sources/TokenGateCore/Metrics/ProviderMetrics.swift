import CoreMetrics
import Synchronization

/// One provider's instruments, made when its runtime is assembled so the request path only increments.
package final class ProviderMetrics: Sendable {
    let id: ProviderID
    private let served: [TokenType: [TokenCacheOutcome: Counter]]
    private let backendCalls: [TokenType: Counter]
    private let backendDuration: [TokenType: Timer]
    private let rateLimited: [RateLimitScope: Counter]
    private let shadowRefusals: [RateLimitScope: Counter]
    private let cacheEntries: Gauge
    private let authorizerCalls: [AuthorizerOutcome: Counter]
    private let authorizerCacheHits: Counter?
    private let labeled: LabeledCounters
    /// The denial counters made so far (made on first use: most code and type pairs never happen).
    private let denials = Mutex<[DenialKey: Counter]>([:])
    private let loggedKeyless = Atomic<Bool>(false)

    /// Which limit refused a request (the `scope` label).
    package enum RateLimitScope: String, Sendable, CaseIterable {
        case provider, caller, context
        case failedAuth = "failed_auth"
        case failedAuthPerPeer = "failed_auth_peer"
        /// A caller's cap on different contexts per window.
        case distinctContexts = "distinct_contexts"
        /// The provider's budget of mints (`backend.mintBudget`).
        case mintBudget = "mint_budget"

        /// The log reason of a refusal by this limit: a literal, so a refusal builds no string.
        var refusalReason: String {
            switch self {
            case .provider: "provider rate limit reached"
            case .caller: "caller rate limit reached"
            case .context: "context rate limit reached"
            case .failedAuth: "failed_auth rate limit reached"
            case .failedAuthPerPeer: "failed_auth_peer rate limit reached"
            case .distinctContexts: "distinct_contexts rate limit reached"
            case .mintBudget: "mint_budget rate limit reached"
            }
        }
    }

    /// What a call to a client's authorizer answered (the `outcome` label).
    package enum AuthorizerOutcome: String, Sendable, CaseIterable {
        case allowed, denied, error
    }

    /// `hasAuthorizer`: whether a client of the provider has an authorizer (only then are its counters made).
    init(id: ProviderID, tokenTypes: Set<TokenType>, hasAuthorizer: Bool = false, factory: any MetricsFactory, labeled: LabeledCounters) {
        self.id = id
        self.labeled = labeled
        typealias Name = GatewayMetrics.Name
        var served: [TokenType: [TokenCacheOutcome: Counter]] = [:]
        var calls: [TokenType: Counter] = [:]
        var durations: [TokenType: Timer] = [:]
        for type in tokenTypes {
            let labels = [("provider", id.rawValue), ("token_type", type.rawValue)]
            for outcome in TokenCacheOutcome.allCases {
                served[type, default: [:]][outcome] = Counter(
                    label: Name.served, dimensions: labels + [("cache", outcome.rawValue)], factory: factory)
            }
            calls[type] = Counter(label: Name.backendCalls, dimensions: labels, factory: factory)
            durations[type] = Timer(label: Name.backendDuration, dimensions: labels, factory: factory)
        }
        self.served = served
        backendCalls = calls
        backendDuration = durations
        var limited: [RateLimitScope: Counter] = [:]
        for scope in RateLimitScope.allCases {
            limited[scope] = Counter(
                label: Name.rateLimited, dimensions: [("provider", id.rawValue), ("scope", scope.rawValue)], factory: factory)
        }
        rateLimited = limited
        var shadow: [RateLimitScope: Counter] = [:]
        for scope in RateLimitScope.allCases {
            shadow[scope] = Counter(
                label: Name.shadowRefusals, dimensions: [("provider", id.rawValue), ("scope", scope.rawValue)], factory: factory)
        }
        shadowRefusals = shadow
        cacheEntries = Gauge(label: Name.cacheEntries, dimensions: [("provider", id.rawValue)], factory: factory)
        var authorizerCalls: [AuthorizerOutcome: Counter] = [:]
        if hasAuthorizer {
            for outcome in AuthorizerOutcome.allCases {
                authorizerCalls[outcome] = Counter(
                    label: Name.authorizerCalls, dimensions: [("provider", id.rawValue), ("outcome", outcome.rawValue)], factory: factory)
            }
        }
        self.authorizerCalls = authorizerCalls
        authorizerCacheHits =
            hasAuthorizer ? Counter(label: Name.authorizerCacheHits, dimensions: [("provider", id.rawValue)], factory: factory) : nil
    }

    /// A token handed out, by how the cache produced it.
    func recordServed(_ type: TokenType, _ outcome: TokenCacheOutcome) { served[type]?[outcome]?.increment() }

    /// A token request refused with `code`; the token type when the request named a valid one.
    func recordDenial(_ code: TokenGateError.Code, type: TokenType?) {
        // A flood of denials is the common case of this counter: found by two enums, not by hashing its labels.
        let key = DenialKey(code: code, type: type)
        if let counter = denials.withLock({ $0[key] }) { return counter.increment() }
        let counter = labeled.counter(
            GatewayMetrics.Name.denials, [("provider", id.rawValue), ("token_type", type?.rawValue ?? ""), ("code", code.rawValue)])
        denials.withLock { $0[key] = counter }
        counter.increment()
    }

    private struct DenialKey: Hashable {
        let code: TokenGateError.Code
        let type: TokenType?
    }

    /// One backend call and how long it took, whatever its outcome.
    func recordBackendCall(_ type: TokenType, duration: Duration) {
        backendCalls[type]?.increment()
        backendDuration[type]?.recordNanoseconds(duration.nanoseconds)
    }

    /// A backend call that failed, by the code it failed with.
    func recordBackendFailure(_ type: TokenType, _ code: TokenGateError.Code) {
        labeled.increment(
            GatewayMetrics.Name.backendFailures,
            [("provider", id.rawValue), ("token_type", type.rawValue), ("code", code.rawValue)])
    }

    /// A token the backend issued that failed the gateway's verification, by reason.
    func recordRejected(_ type: TokenType, _ reason: TokenRejection.Reason) {
        labeled.increment(
            GatewayMetrics.Name.rejected, [("provider", id.rawValue), ("token_type", type.rawValue), ("reason", reason.rawValue)])
    }

    /// A verified token that named no key (as Google's own token servers sign them); true the first time, so the
    /// gateway logs it once per provider.
    func recordKeylessToken(_ type: TokenType) -> Bool {
        labeled.increment(GatewayMetrics.Name.kidless, [("provider", id.rawValue), ("token_type", type.rawValue)])
        return !loggedKeyless.exchange(true, ordering: .relaxed)
    }

    /// A request refused by a rate limit.
    func recordRateLimited(_ scope: RateLimitScope) { rateLimited[scope]?.increment() }

    /// A request a limit in `shadow` mode would have refused, and let through.
    func recordShadowRefusal(_ scope: RateLimitScope) { shadowRefusals[scope]?.increment() }

    /// One call to a client's authorizer, by what it answered.
    func recordAuthorizerCall(_ outcome: AuthorizerOutcome) { authorizerCalls[outcome]?.increment() }

    /// An authorizer answer reused from its cache, without a call.
    func recordAuthorizerCacheHit() { authorizerCacheHits?.increment() }

    /// The number of cached tokens now (set when metrics are read).
    func recordCacheEntries(_ count: Int) { cacheEntries.record(count) }
}

/// What a backend plugin may count: its upstream retries, and the calls it makes to a signing service (IAM) and
/// for access tokens.
public struct BackendMetrics: Sendable {
    private let provider: ProviderID?
    private let retries: Counter?
    private let factory: (any MetricsFactory)?
    private let labeled: LabeledCounters?

    /// Counts nothing (tests, and commands that run no server).
    public static let none = BackendMetrics(provider: nil, retries: nil, factory: nil)

    private init(provider: ProviderID?, retries: Counter?, factory: (any MetricsFactory)?) {
        self.provider = provider
        self.retries = retries
        self.factory = factory
        self.labeled = factory.map { LabeledCounters(factory: $0) }
    }

    /// The instruments of `provider`'s backend.
    init(provider: ProviderID, factory: any MetricsFactory) {
        self.init(
            provider: provider,
            retries: Counter(label: GatewayMetrics.Name.upstreamRetries, dimensions: [("provider", provider.rawValue)], factory: factory),
            factory: factory)
    }

    /// One more attempt at the upstream after a failure worth retrying.
    public func recordRetry() { retries?.increment() }

    /// One call to a signing service (`tokengate_iam_calls_total{provider, outcome}` and its latency in
    /// `tokengate_iam_call_duration_seconds`); `outcome` is a short stable word (`ok`, `forbidden`, `unavailable`,
    /// `timeout`, `invalid`).
    public func recordSigningCall(outcome: String, duration: Duration) {
        guard let provider, let factory, let labeled else { return }
        labeled.increment(GatewayMetrics.Name.iamCalls, [("provider", provider.rawValue), ("outcome", outcome)])
        Timer(label: GatewayMetrics.Name.iamDuration, dimensions: [("provider", provider.rawValue)], factory: factory)
            .recordNanoseconds(duration.nanoseconds)
    }

    /// One fetch of an access token for the backend's own credentials (`tokengate_access_token_refreshes_total`).
    public func recordAccessTokenRefresh(succeeded: Bool) {
        guard let provider, let labeled else { return }
        labeled.increment(
            GatewayMetrics.Name.accessTokenRefreshes, [("provider", provider.rawValue), ("outcome", succeeded ? "ok" : "failed")])
    }
}

extension Duration {
    /// The duration in whole nanoseconds (saturating).
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : product + attoseconds / 1_000_000_000
    }
}
