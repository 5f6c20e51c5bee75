import CoreMetrics
import Logging
import Synchronization

/// What the acceptance checks found, per provider and token type, kept by the ``TokenService`` so it outlives
/// every generation: the admin `/readyz` details, the gauge an alert reads (`tokengate_fleet_engine_accepted`: 1
/// accepted, 0 refused), the count of checks by verdict, a log line when the outcome's verdict changes, and when
/// each provider is next due. An `unknown` outcome (Fleet Engine unavailable) says nothing about the tenant: the
/// gauge and the provider's readiness keep the last verdict.
package final class AcceptanceResults: Sendable {
    /// The last check of one token type.
    package struct Entry: Sendable, Equatable {
        /// What it found.
        package var outcome: AcceptanceOutcome
        /// When, epoch seconds.
        package var checkedAt: Int64
        /// Since when checks have found this verdict, epoch seconds.
        package var since: Int64
        /// The last outcome that was a verdict (accepted or refused), when the last one was not: what the gauge
        /// and the readiness still go by.
        package var lastVerdict: AcceptanceOutcome?

        /// The verdict the tenant is judged by: the outcome's, or the last one's while checks give none.
        package var standing: AcceptanceOutcome? { outcome.verdict == .unknown ? lastVerdict : outcome }

        /// ``checkedAt`` in RFC 3339 (UTC), as the admin listener shows it.
        package var checkedAtText: String { RFC3339.format(checkedAt) }
        /// ``since`` in RFC 3339 (UTC).
        package var sinceText: String { RFC3339.format(since) }
    }

    private struct Key: Hashable {
        var provider: ProviderID
        var type: TokenType
    }

    private struct LastRun {
        var settings: AcceptanceCheckSettings
        var at: ContinuousClock.Instant
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var gauges: [Key: Gauge] = [:]
        var lastRuns: [ProviderID: LastRun] = [:]
    }

    private let clock: TokenGateClock
    private let logger: Logger
    private let metrics: GatewayMetrics
    private let state = Mutex(State())

    init(clock: TokenGateClock, logger: Logger, metrics: GatewayMetrics) {
        self.clock = clock
        self.logger = logger
        self.metrics = metrics
    }

    /// Records `outcome` of the check of `probe` at `provider`: counted, kept, in the gauge unless `unknown`, and
    /// logged when the verdict differs from the last one.
    func record(_ outcome: AcceptanceOutcome, of probe: AcceptanceProbe, at provider: ProviderID) {
        let now = clock.wallSeconds()
        let key = Key(provider: provider, type: probe.type)
        metrics.recordAcceptanceCheck(provider, probe.type, outcome.verdict)
        let previous = state.withLock { state -> AcceptanceOutcome.Verdict? in
            let previous = state.entries[key]
            let since = previous?.outcome.verdict == outcome.verdict ? previous!.since : now
            let lastVerdict = outcome.verdict == .unknown ? previous?.standing : nil
            state.entries[key] = Entry(outcome: outcome, checkedAt: now, since: since, lastVerdict: lastVerdict)
            if outcome.verdict != .unknown {
                let gauge =
                    state.gauges[key]
                    ?? Gauge(
                        label: GatewayMetrics.Name.fleetEngineAccepted,
                        dimensions: [("provider", provider.rawValue), ("token_type", probe.type.rawValue)],
                        factory: metrics.factory)
                gauge.record(outcome.verdict == .accepted ? 1 : 0)
                state.gauges[key] = gauge
            }
            return previous?.outcome.verdict
        }
        guard previous != outcome.verdict else { return }
        var metadata: Logger.Metadata = [
            "provider": "\(provider)", "token_type": "\(probe.type)", "verdict": "\(outcome.verdict.rawValue)", "call": "\(probe.call)",
            "answer": "\(outcome.summary)",
        ]
        if let previous { metadata["was"] = "\(previous.rawValue)" }
        if outcome.verdict != .accepted { metadata["detail"] = "\(outcome.detail)" }
        switch outcome.verdict {
        case .accepted: logger.notice("Fleet Engine accepts the provider's tokens", metadata: metadata)
        case .refused: logger.error("Fleet Engine refuses the provider's tokens", metadata: metadata)
        case .unknown: logger.warning("the acceptance check got no verdict from Fleet Engine", metadata: metadata)
        }
    }

    /// The last check of each token type of `provider`, by type.
    package func entries(of provider: ProviderID) -> [TokenType: Entry] {
        state.withLock { state in
            var entries: [TokenType: Entry] = [:]
            for (key, entry) in state.entries where key.provider == provider { entries[key.type] = entry }
            return entries
        }
    }

    /// One reason per token type whose standing verdict is `refused`, for the provider's readiness (degraded).
    func refusals(of provider: ProviderID) -> [String] {
        entries(of: provider).sorted { $0.key < $1.key }.compactMap { type, entry in
            guard let refused = entry.standing, refused.verdict == .refused else { return nil }
            let checked = entry.lastVerdict == nil ? "since \(RFC3339.format(entry.since))" : "at the last check with a verdict"
            return "fleet_engine_refused: Fleet Engine refuses \(type) tokens (\(refused.summary)) \(checked): \(refused.detail)"
        }
    }

    /// When `provider`'s next check is due: its last run plus the interval, or now when it has not run with
    /// `settings` (a new check, or settings a reload changed).
    func nextCheck(of provider: ProviderID, _ settings: AcceptanceCheckSettings) -> ContinuousClock.Instant {
        let now = ContinuousClock.now
        guard let last = state.withLock({ $0.lastRuns[provider] }), last.settings == settings else { return now }
        return last.at + settings.interval
    }

    /// `provider` was just checked with `settings`.
    func ran(_ provider: ProviderID, _ settings: AcceptanceCheckSettings) {
        state.withLock { $0.lastRuns[provider] = LastRun(settings: settings, at: .now) }
    }

    /// Forgets what no longer applies: providers and token types `checked` does not name (a reload removed the
    /// provider or its check), their gauges gone from the scrape.
    func retain(_ checked: [ProviderID: AcceptanceCheckSettings]) {
        state.withLock { state in
            for key in Array(state.entries.keys) where checked[key.provider]?.tokenTypes.contains(key.type) != true {
                state.entries[key] = nil
                state.gauges.removeValue(forKey: key)?.destroy()
            }
            for key in Array(state.gauges.keys) where checked[key.provider]?.tokenTypes.contains(key.type) != true {
                state.gauges.removeValue(forKey: key)?.destroy()
            }
            for provider in Array(state.lastRuns.keys) where checked[provider] == nil { state.lastRuns[provider] = nil }
        }
    }
}
