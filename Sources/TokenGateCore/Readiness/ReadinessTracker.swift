import CoreMetrics
import Logging
import Synchronization

/// Keeps each provider's readiness over time: since when it is in its state, a line in the log when it changes,
/// and the gauges an alert reads (`tokengate_provider_ready`, `tokengate_ready`).
///
/// Owned by the ``TokenService``, so it outlives every generation: a reload that keeps a provider keeps its
/// history, and a provider the reload removed leaves the gauges. It sees a change when it evaluates: at every
/// `/readyz`, every scrape and every few seconds (``ReadinessWatch``).
package final class ReadinessTracker: Sendable {
    private struct Entry {
        var state: ProviderReadiness.State
        var since: Int64
        let gauge: Gauge
    }

    private struct State {
        var providers: [ProviderID: Entry] = [:]
        var isReady: Bool?
    }

    private let clock: TokenGateClock
    private let logger: Logger
    private let factory: any MetricsFactory
    private let startedAt: UInt64
    private let state = Mutex(State())
    private let processGauge: Gauge
    private let acceptance: AcceptanceResults

    /// A tracker whose start is now; a provider whose tokens Fleet Engine refuses at its `acceptance` check is
    /// degraded (it serves, but its apps' calls fail).
    init(clock: TokenGateClock, logger: Logger, factory: any MetricsFactory, acceptance: AcceptanceResults) {
        self.acceptance = acceptance
        self.clock = clock
        self.logger = logger
        self.factory = factory
        self.startedAt = clock.monotonicNanoseconds()
        self.processGauge = Gauge(label: GatewayMetrics.Name.processReady, factory: factory)
    }

    /// The readiness of the process serving `generation`, now; records what changed since the last evaluation.
    @discardableResult
    package func evaluate(_ generation: GatewayGeneration) -> GatewayReadiness {
        let now = clock.wallSeconds()
        let settings = generation.configuration.server.readiness
        let isStarting = clock.monotonicNanoseconds() &- startedAt < TokenGateClock.nanoseconds(settings.startTimeout)
        let current = generation.providers.keys.sorted().compactMap { id in
            generation.providers[id].map { (id, generation.readiness(of: $0).adding(refusals: acceptance.refusals(of: id))) }
        }
        var changes: [(id: ProviderID, from: ProviderReadiness.State?, to: ProviderReadiness)] = []
        let providers = state.withLock { state in
            let seen = Set(current.map(\.0))
            for (id, entry) in state.providers where !seen.contains(id) {
                entry.gauge.destroy()
                state.providers[id] = nil
            }
            return current.map { id, readiness in
                var entry =
                    state.providers[id]
                    ?? Entry(
                        state: readiness.state, since: now,
                        gauge: Gauge(label: GatewayMetrics.Name.providerReady, dimensions: [("provider", id.rawValue)], factory: factory))
                if state.providers[id] == nil {
                    changes.append((id, nil, readiness))
                } else if entry.state != readiness.state {
                    changes.append((id, entry.state, readiness))
                    entry.state = readiness.state
                    entry.since = now
                }
                entry.gauge.record(readiness.isReady ? 1 : 0)
                state.providers[id] = entry
                return GatewayReadiness.Provider(
                    id: id, readiness: readiness, since: entry.since, isRequired: settings.requireProviders.contains(id))
            }
        }
        let verdict = GatewayReadiness(providers: providers, settings: settings, isStarting: isStarting)
        processGauge.record(verdict.isReady ? 1 : 0)
        let processChanged = state.withLock { state in
            defer { state.isReady = verdict.isReady }
            return state.isReady != verdict.isReady
        }
        for change in changes { log(change.id, from: change.from, to: change.to) }
        if processChanged {
            logger.log(
                level: verdict.isReady ? .notice : (isStarting ? .info : .warning), verdict.isReady ? "ready: taking traffic" : "not ready",
                metadata: verdict.isReady ? [:] : ["reasons": "\(verdict.reasons.joined(separator: "; "))"])
        }
        return verdict
    }

    /// One line per change: a provider that cannot serve is a warning, one that can again a notice; what a
    /// provider is at first sight is said only when it cannot serve.
    private func log(_ id: ProviderID, from: ProviderReadiness.State?, to: ProviderReadiness) {
        guard from != nil || to.state != .ready else { return }
        var metadata: Logger.Metadata = ["provider": "\(id)", "state": "\(to.state.rawValue)"]
        if let from { metadata["was"] = "\(from.rawValue)" }
        if !to.reasons.isEmpty { metadata["reasons"] = "\(to.reasons.joined(separator: "; "))" }
        let level: Logger.Level = to.state == .notReady ? .warning : (to.state == .starting ? .info : .notice)
        logger.log(level: level, "provider readiness changed", metadata: metadata)
    }
}
