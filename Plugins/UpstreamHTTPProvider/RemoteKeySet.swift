import AsyncHTTPClient
import JOSE
import Logging
import Synchronization
import TokenGateCore

/// One `jwksUrl:` key set: fetched lazily on first use and again after `refreshInterval`, single-flight, with at
/// most one forced refetch per `minRefetchInterval` for an unknown `kid`. The last good set is kept whenever a
/// fetch fails or returns a set that is not usable.
final class RemoteKeySet: Sendable {
    struct Snapshot: Sendable {
        var keys: [JWSKey]
        var fetchedAt: UInt64
        /// Each key's public JWK bytes, to tell a changed set from the same one.
        var fingerprint: [[UInt8]]
    }

    private struct State {
        var good: Snapshot?
        var lastFailedAt: UInt64?
        var lastForcedAt: UInt64?
        var inFlight: Task<Snapshot?, Never>?
    }

    let source: KeySourceConfig.RemoteJWKS
    private let fetcher: JWKSFetcher
    private let clock: TokenGateClock
    private let minRefetchInterval: Duration
    private let logger: Logger
    private let state = Mutex(State())

    init(source: KeySourceConfig.RemoteJWKS, fetcher: JWKSFetcher, clock: TokenGateClock, minRefetchInterval: Duration, logger: Logger) {
        self.source = source
        self.fetcher = fetcher
        self.clock = clock
        self.minRefetchInterval = minRefetchInterval
        self.logger = logger
    }

    /// The current keys: cached while fresh, fetched when missing or stale. `nil` when no fetch has ever worked.
    func keys() async -> [JWSKey]? {
        let now = clock.monotonicNanoseconds()
        let flight: Task<Snapshot?, Never>? = state.withLock { state in
            if let good = state.good, !Self.elapsed(since: good.fetchedAt, now: now, atLeast: source.refreshInterval) {
                return nil
            }
            // After a failure, a stale set is used until the refetch interval has passed, so a dead key server is
            // not called on every request; with no set at all every call tries (single-flight still collapses them).
            if state.good != nil, let failed = state.lastFailedAt, !Self.elapsed(since: failed, now: now, atLeast: minRefetchInterval) {
                return nil
            }
            return startFlight(&state)
        }
        if let flight { _ = await flight.value }
        return state.withLock { $0.good?.keys }
    }

    /// Refetches because a token names a `kid` the current set lacks. Returns the new keys only if the set changed;
    /// `nil` when rate-limited, failed, invalid or unchanged.
    func refetch() async -> [JWSKey]? {
        let now = clock.monotonicNanoseconds()
        let started: (flight: Task<Snapshot?, Never>, before: [[UInt8]]?)? = state.withLock { state in
            // Rate limit: at most one forced refetch per interval, and none right after a failed fetch.
            for last in [state.lastForcedAt, state.lastFailedAt].compactMap({ $0 })
            where !Self.elapsed(since: last, now: now, atLeast: minRefetchInterval) {
                return nil
            }
            state.lastForcedAt = now
            return (startFlight(&state), state.good?.fingerprint)
        }
        guard let started, let fresh = await started.flight.value, fresh.fingerprint != started.before else { return nil }
        return fresh.keys
    }

    private func startFlight(_ state: inout State) -> Task<Snapshot?, Never> {
        if let flight = state.inFlight { return flight }
        let flight = Task { await self.fetchAndStore() }
        state.inFlight = flight
        return flight
    }

    private func fetchAndStore() async -> Snapshot? {
        do {
            let keys = try await fetcher.fetch(source.url)
            let snapshot = Snapshot(
                keys: keys,
                fetchedAt: clock.monotonicNanoseconds(),
                fingerprint: keys.map { (try? $0.publicJWK()) ?? [] }.sorted { $0.lexicographicallyPrecedes($1) }
            )
            state.withLock { state in
                state.good = snapshot
                state.lastFailedAt = nil
                state.inFlight = nil
            }
            return snapshot
        } catch {
            let hadGood = state.withLock { state in
                state.lastFailedAt = clock.monotonicNanoseconds()
                state.inFlight = nil
                return state.good != nil
            }
            logger.warning(
                "JWKS fetch failed",
                metadata: ["jwksUrl": "\(source.url)", "reason": "\(error)", "keptLastGoodSet": "\(hadGood)"]
            )
            return nil
        }
    }

    private static func elapsed(since start: UInt64, now: UInt64, atLeast interval: Duration) -> Bool {
        let (seconds, attoseconds) = interval.components
        let nanoseconds = UInt64(max(seconds, 0)) * 1_000_000_000 + UInt64(max(attoseconds, 0) / 1_000_000_000)
        return now >= start && now - start >= nanoseconds
    }
}
