import CoreMetrics

/// The shared state's instruments. Labels are closed lists and provider IDs from the configuration.
final class SharedStateMetrics: Sendable {
    private let up: Gauge
    private let errors: [SharedState.Operation: Counter]
    private let labeled: LabeledCounters

    /// How a local cache miss was answered from the shared cache.
    enum CacheOutcome: String {
        /// A sealed, verified token was there.
        case hit
        /// Nothing (usable) was there.
        case miss
        /// Something was there that did not open or did not verify: never served.
        case rejected
        /// A token minted here was not stored: its provider already stores its share (`cache.maxEntries`).
        case overShare = "over_share"
    }

    /// How a replica that missed everywhere came by its token.
    enum MintOutcome: String {
        /// It took the lock and minted.
        case locked
        /// Another replica minted while it waited.
        case waited
        /// The lock outlived the wait: it minted without the lock.
        case timedOut = "timed_out"
        /// The store was unreachable: it minted on its own.
        case unshared
    }

    init(factory: any MetricsFactory) {
        up = Gauge(label: Name.up, factory: factory)
        var errors: [SharedState.Operation: Counter] = [:]
        for operation in SharedState.Operation.allCases {
            errors[operation] = Counter(label: Name.errors, dimensions: [("operation", operation.rawValue)], factory: factory)
        }
        self.errors = errors
        labeled = LabeledCounters(factory: factory)
    }

    func recordUp(_ isUp: Bool) { up.record(isUp ? 1 : 0) }
    func recordError(_ operation: SharedState.Operation) { errors[operation]?.increment() }
    func recordCache(_ outcome: CacheOutcome, provider: ProviderID) {
        labeled.increment(Name.cache, [("provider", provider.rawValue), ("outcome", outcome.rawValue)])
    }
    func recordMint(_ outcome: MintOutcome, provider: ProviderID) {
        labeled.increment(Name.mints, [("provider", provider.rawValue), ("outcome", outcome.rawValue)])
    }
    func recordLocalLimits(provider: ProviderID) { labeled.increment(Name.localLimits, [("provider", provider.rawValue)]) }

    enum Name {
        static let up = "tokengate_shared_state_up"
        static let errors = "tokengate_shared_state_errors_total"
        static let cache = "tokengate_shared_cache_total"
        static let mints = "tokengate_shared_mints_total"
        static let localLimits = "tokengate_rate_limit_local_fallback_total"
    }
}
