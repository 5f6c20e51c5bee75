import YAML

/// How one provider's calls to its backend (and to its clients' authorizers) are contained: at most
/// `maxConcurrentCalls` at once, the excess queued for `queueTimeout`, and a circuit breaker that stops calling a
/// callee that keeps failing. Core-owned keys of the `backend:` section, named for it; the plugin never sees them.
/// They set every ``CallGuard`` of the provider (backend and authorizer calls) and its mint budget.
///
/// ```yaml
/// backend:
///   type: upstream
///   maxConcurrentCalls: 64     # per token type
///   queueTimeout: 1s
///   mintBudget: { rate: 100/s, burst: 200 }    # or: mintBudget: off
///   circuitBreaker:            # or: circuitBreaker: off
///     consecutiveFailures: 5
///     failureRatio: 0.5
///     minimumCalls: 20
///     window: 30s
///     openFor: 10s
/// ```
package struct BackendGuardSettings: Sendable, Equatable, CustomStringConvertible {
    /// Calls in flight at once, per call kind.
    package var maxConcurrentCalls = 64
    /// How long a call waits for a free slot before it is refused `backend_unavailable`.
    package var queueTimeout: Duration = .seconds(1)
    /// The breaker, or nil when it is off.
    package var circuitBreaker: CircuitBreakerSettings? = CircuitBreakerSettings()
    /// How many backend calls (mints, refreshes included) the provider may start, per replica; past it a new context
    /// is refused `429`. Nil when off.
    package var mintBudget: RateLimit? = Self.defaultMintBudget

    /// 100 a second, 200 at once: far above a fleet's new trips, well below what one tenant would need to take the
    /// others' share of IAM's calls or of the CPU that signs.
    package static let defaultMintBudget = RateLimit(count: 100, per: .seconds(1), burst: 200)

    /// The keys of `backend:` that are the core's.
    package static let keys: Set<String> = ["maxConcurrentCalls", "queueTimeout", "circuitBreaker", "mintBudget"]

    /// Creates settings; the defaults are what a provider without the keys gets.
    package init() {}

    package var description: String {
        let breaker = circuitBreaker.map(String.init(describing:)) ?? "off"
        return
            "maxConcurrentCalls=\(maxConcurrentCalls) queueTimeout=\(queueTimeout) circuitBreaker=\(breaker) mintBudget=\(mintBudget.map(String.init(describing:)) ?? "off")"
    }

    /// Reads the core's keys of a `backend:` section (the others are the plugin's).
    static func parse(backend: ConfigNode) throws -> BackendGuardSettings {
        var settings = BackendGuardSettings()
        for (key, node) in try backend.entries() where keys.contains(key) {
            switch key {
            case "maxConcurrentCalls": settings.maxConcurrentCalls = try node.int(in: 1...10_000)
            case "queueTimeout":
                settings.queueTimeout = try node.duration()
                guard settings.queueTimeout <= .seconds(30) else { throw node.error("must be at most 30s") }
            case "mintBudget": settings.mintBudget = try parseMintBudget(node)
            default: settings.circuitBreaker = try CircuitBreakerSettings.parse(node)
            }
        }
        return settings
    }
}

extension BackendGuardSettings {
    /// `off`, or `{ rate: N/s, burst: M }` (burst default: the rate's count).
    static func parseMintBudget(_ node: ConfigNode) throws -> RateLimit? {
        if node.yaml.scalar != nil {
            guard try node.string() == "off" else { throw node.error("expected off or { rate: 100/s, burst: 200 }") }
            return nil
        }
        let mapping = try node.mapping(allowedKeys: ["rate", "burst"])
        let rateNode = try mapping.required("rate")
        let text = try rateNode.string()
        guard let parsed = RateLimit(parsing: text, burst: 1) else {
            throw rateNode.error("expected a rate such as 200/s, 600/min or 10000/h, got '\(text)'")
        }
        let burst = try mapping.optional("burst")?.int(in: 1...1_000_000) ?? parsed.count
        return RateLimit(count: parsed.count, per: parsed.period, burst: burst)
    }
}

/// When a breaker opens, and for how long: after `consecutiveFailures` failed calls in a row, or when at least
/// `minimumCalls` calls within `window` failed at `failureRatio` or more. Open, it refuses at once for `openFor`;
/// then one probe call is let through, whose outcome closes it or opens it again.
package struct CircuitBreakerSettings: Sendable, Equatable, CustomStringConvertible {
    package var consecutiveFailures = 5
    package var failureRatio = 0.5
    package var minimumCalls = 20
    package var window: Duration = .seconds(30)
    package var openFor: Duration = .seconds(10)

    /// The default breaker.
    package init() {}

    package var description: String {
        "consecutiveFailures=\(consecutiveFailures) failureRatio=\(failureRatio) minimumCalls=\(minimumCalls) window=\(window) openFor=\(openFor)"
    }

    /// `off`, or a mapping of the five keys (each optional).
    static func parse(_ node: ConfigNode) throws -> CircuitBreakerSettings? {
        if node.yaml.scalar != nil {
            guard try node.string() == "off" else { throw node.error("expected off or a mapping of the breaker's settings") }
            return nil
        }
        let mapping = try node.mapping(allowedKeys: ["consecutiveFailures", "failureRatio", "minimumCalls", "window", "openFor"])
        var settings = CircuitBreakerSettings()
        if let value = mapping.optional("consecutiveFailures") { settings.consecutiveFailures = try value.int(in: 1...10_000) }
        if let value = mapping.optional("failureRatio") {
            guard let ratio = Double(try value.string()), ratio > 0, ratio <= 1 else {
                throw value.error("expected a ratio above 0 and at most 1, such as 0.5")
            }
            settings.failureRatio = ratio
        }
        if let value = mapping.optional("minimumCalls") { settings.minimumCalls = try value.int(in: 1...1_000_000) }
        if let value = mapping.optional("window") {
            settings.window = try value.duration()
            guard settings.window >= .seconds(1), settings.window <= .seconds(3600) else { throw value.error("must be between 1s and 1h") }
        }
        if let value = mapping.optional("openFor") {
            settings.openFor = try value.duration()
            guard settings.openFor >= .milliseconds(100), settings.openFor <= .seconds(600) else {
                throw value.error("must be between 100ms and 10m")
            }
        }
        return settings
    }
}
