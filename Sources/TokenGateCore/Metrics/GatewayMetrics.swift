package import CoreMetrics
import Synchronization

/// The gateway's instruments, made through one swift-metrics factory: the process-wide one that `serve`
/// bootstraps (Prometheus), or a test's own, so several gateways in one test process count apart.
///
/// Every label is bounded by the configuration or by a closed list (token types, error codes, cache outcomes,
/// rate-limit scopes, rejection reasons): never a trip, vehicle, caller or anything else a request can make up.
/// Names follow Prometheus conventions: counters end in `_total`, durations are `_seconds`.
package final class GatewayMetrics: Sendable {
    /// Where instruments are made.
    package let factory: any MetricsFactory
    private let labeled: LabeledCounters
    private let reloads: [ReloadOutcome: Counter]
    private let generation: Gauge

    /// How a reload ended.
    package enum ReloadOutcome: String, Sendable, CaseIterable {
        case success, failure
    }

    /// Instruments made through `factory`; by default the process-wide one (`MetricsSystem.bootstrap`).
    package init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
        labeled = LabeledCounters(factory: factory)
        var reloads: [ReloadOutcome: Counter] = [:]
        for outcome in ReloadOutcome.allCases {
            reloads[outcome] = Counter(label: Name.reloads, dimensions: [("outcome", outcome.rawValue)], factory: factory)
        }
        self.reloads = reloads
        generation = Gauge(label: Name.generation, factory: factory)
    }

    /// A denial of a token request that names no configured provider: counted as `provider=""`.
    func recordDenialWithoutProvider(_ code: TokenGateError.Code, type: TokenType?) {
        labeled.increment(Name.denials, [("provider", ""), ("token_type", type?.rawValue ?? ""), ("code", code.rawValue)])
    }

    /// The instruments of `provider`'s guard of `call`s (of `tokenType`'s backend calls).
    func guardMetrics(_ provider: ProviderID, call: CallGuard.CallKind, tokenType: TokenType? = nil) -> CallGuardMetrics {
        CallGuardMetrics(provider: provider, call: call, tokenType: tokenType, factory: factory, labeled: labeled)
    }

    /// Which tenants from tenant files run on a stale configuration (1) or their current one (0), and how many
    /// tenant files did not apply; `previous`'s tenants that are gone read 0. Inline providers have no series.
    package func recordTenantConfigurations(of generation: GatewayGeneration, previous: GatewayGeneration?) {
        let ids = Set(generation.configuration.providerFiles.keys).union(previous?.configuration.providerFiles.keys ?? [:].keys)
        for id in ids.sorted() {
            Gauge(label: Name.tenantConfigStale, dimensions: [("provider", id.rawValue)], factory: factory)
                .record(generation.staleTenants[id] == nil ? 0 : 1)
        }
        Gauge(label: Name.tenantFilesBroken, factory: factory).record(generation.brokenTenantFiles.count)
    }

    /// A reload's outcome.
    package func recordReload(_ outcome: ReloadOutcome) { reloads[outcome]?.increment() }

    /// The generation now serving.
    package func recordGeneration(_ number: Int) { generation.record(number) }

    /// A JWKS fetch of a key set, by the URL it came from (bounded by the configuration) and its outcome.
    func recordKeyFetch(url: String, succeeded: Bool) {
        labeled.increment(Name.keyFetches, [("url", url), ("outcome", succeeded ? "success" : "failure")])
    }

    /// An error answered outside any provider's token route: an unknown path, a wrong method, oversized headers.
    package func recordHTTPError(_ code: TokenGateError.Code) {
        labeled.increment(Name.httpErrors, [("code", code.rawValue)])
    }

    /// A request to the admin API refused for its key (`unauthenticated`, `forbidden`) or for too many wrong
    /// keys from its address (`rate_limited`).
    package func recordAdminAuthFailure(_ code: TokenGateError.Code) {
        labeled.increment(Name.adminAuthFailures, [("code", code.rawValue)])
    }

    /// A fleet-event push to `provider` (nil: a path naming no provider with `events:`, counted as `provider=""`) by
    /// its outcome: `ended`, `lifted`, `kept`, `duplicate`, `ignored`, `malformed`, `full`, or refused:
    /// `unauthenticated`, `rate_limited`.
    package func recordFleetEvent(_ provider: ProviderID?, outcome: String) {
        labeled.increment(Name.fleetEvents, [("provider", provider?.rawValue ?? ""), ("outcome", outcome)])
    }

    /// An acceptance check of `provider`'s `type` tokens, by its verdict (`accepted`, `refused`, `unknown`).
    func recordAcceptanceCheck(_ provider: ProviderID, _ type: TokenType, _ verdict: AcceptanceOutcome.Verdict) {
        labeled.increment(Name.fleetEngineChecks, [("provider", provider.rawValue), ("token_type", type.rawValue), ("verdict", verdict.rawValue)])
    }

    /// The instruments of one provider.
    func provider(_ id: ProviderID, tokenTypes: Set<TokenType>, hasAuthorizer: Bool = false) -> ProviderMetrics {
        ProviderMetrics(id: id, tokenTypes: tokenTypes, hasAuthorizer: hasAuthorizer, factory: factory, labeled: labeled)
    }

    /// The metric names, in one place (docs/operations.md lists them with their meaning).
    enum Name {
        static let served = "tokengate_tokens_served_total"
        static let denials = "tokengate_denials_total"
        static let backendCalls = "tokengate_backend_calls_total"
        static let backendDuration = "tokengate_backend_call_duration_seconds"
        static let backendFailures = "tokengate_backend_failures_total"
        static let rejected = "tokengate_tokens_rejected_total"
        static let kidless = "tokengate_tokens_without_kid_total"
        static let iamCalls = "tokengate_iam_calls_total"
        static let iamDuration = "tokengate_iam_call_duration_seconds"
        static let accessTokenRefreshes = "tokengate_access_token_refreshes_total"
        static let cacheEntries = "tokengate_cache_entries"
        static let rateLimited = "tokengate_rate_limited_total"
        static let shadowRefusals = "tokengate_rate_limit_shadow_refusals_total"
        static let keyFetches = "tokengate_jwks_fetches_total"
        static let upstreamRetries = "tokengate_upstream_retries_total"
        static let generation = "tokengate_config_generation"
        static let reloads = "tokengate_config_reloads_total"
        static let httpErrors = "tokengate_http_errors_total"
        static let adminAuthFailures = "tokengate_admin_auth_failures_total"
        static let authorizerCalls = "tokengate_authorizer_calls_total"
        static let authorizerCacheHits = "tokengate_authorizer_cache_hits_total"
        static let circuitState = "tokengate_circuit_state"
        static let fleetEvents = "tokengate_fleet_events_total"
        static let tenantConfigStale = "tokengate_tenant_config_stale"
        static let tenantFilesBroken = "tokengate_tenant_files_broken"
        static let circuitTransitions = "tokengate_circuit_transitions_total"
        static let backendRefusals = "tokengate_backend_refusals_total"
        static let providerReady = "tokengate_provider_ready"
        static let processReady = "tokengate_ready"
        static let fleetEngineAccepted = "tokengate_fleet_engine_accepted"
        static let fleetEngineChecks = "tokengate_fleet_engine_checks_total"
    }
}

/// Counters whose label values are only known when they first happen (an error code, a rejection reason), made
/// on first use and kept: a lookup under a lock afterwards, never a factory call per event.
final class LabeledCounters: Sendable {
    private let factory: any MetricsFactory
    private let counters = Mutex<[Key: Counter]>([:])

    private struct Key: Hashable {
        var name: String
        var labels: [String]
    }

    init(factory: any MetricsFactory) { self.factory = factory }

    func increment(_ name: String, _ labels: [(String, String)]) {
        counter(name, labels).increment()
    }

    /// The counter `name` with `labels`, made the first time it is asked for.
    func counter(_ name: String, _ labels: [(String, String)]) -> Counter {
        let key = Key(name: name, labels: labels.flatMap { [$0.0, $0.1] })
        return counters.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = Counter(label: name, dimensions: labels, factory: factory)
            counters[key] = counter
            return counter
        }
    }
}
