package import JOSE
package import Logging
import Synchronization

/// One JWKS URL's keys: the latest good set, shared by every tenant and every use of that URL in a generation
/// (and handed on to the next generation by a reload, so a reload never empties it).
///
/// Read-mostly state behind a `Mutex`, no actor: ``current()`` is a lock and a copy, so authentication and
/// verification stay synchronous. Creating a key set fetches nothing: its ``KeySetRefresher`` (one per set, run by
/// the generation) fetches when the gateway starts, then every refresh interval after a success, every
/// ``retryInterval`` after a failure, and early when a token names a `kid` the set lacks (rate-limited here, so a
/// flood of forged kids costs one fetch per interval).
///
/// A failed fetch, a body that is not a JWKS, or a set that holds no public key or any symmetric key keeps the last
/// good set: an identity provider or key server that is down for a while must not lock everyone out. Failures are
/// logged with a reason, never with key material.
package final class RemoteKeySet: Sendable {
    /// How soon a failed fetch is retried, and the least time between two early refreshes for an unknown `kid`.
    package static let retryInterval: Duration = .seconds(30)

    struct State {
        var keys: JWKSet?
        /// Bumped whenever a fetch installs a set: lets readers tell a new set from the same one.
        var version = 0
        var refreshInterval: Duration
        var lastFailure: String?
        var successes = 0
        var failures = 0
        var earlyRefreshes = 0
        /// Monotonic nanoseconds of the last successful fetch.
        var lastSuccessAt: UInt64?
        /// Monotonic nanoseconds of the last early refresh granted, for the rate limit.
        var lastEarlyRefreshAt: UInt64?
        /// An early refresh was granted while the refresher was busy; its next wait returns at once.
        var isRefreshPending = false
        /// How many refreshers run this set now (two overlap briefly while a reload swaps generations).
        var refreshers = 0
        /// The refresher waiting for an early refresh request, by its wait's ID.
        var refresherWaiter: (id: UInt64, continuation: CheckedContinuation<Void, Never>)?
        /// Callers waiting for the next fetch to finish, by ID.
        var fetchWaiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextWaiterID: UInt64 = 0
    }

    /// The JWKS URL.
    package let url: JWKSURL
    let fetcher: any JWKSFetcher
    let clock: TokenGateClock
    let logger: Logger
    let metrics: GatewayMetrics?
    private let state: Mutex<State>

    /// A key set for `url`, empty until the first successful fetch. Fetches nothing. Each fetch is counted in
    /// `metrics` by outcome.
    package init(
        url: JWKSURL, fetcher: any JWKSFetcher, clock: TokenGateClock = .system, logger: Logger, metrics: GatewayMetrics? = nil
    ) {
        self.url = url
        self.fetcher = fetcher
        self.clock = clock
        self.metrics = metrics
        var logger = logger
        logger[metadataKey: "jwks_url"] = "\(url.url)"
        self.logger = logger
        self.state = Mutex(State(refreshInterval: url.refreshInterval))
    }

    /// The latest good key set, or nil if no fetch has succeeded yet.
    package func current() -> JWKSet? { state.withLock { $0.keys } }

    /// The latest good set with its version (0: none yet).
    func snapshot() -> (keys: JWKSet?, version: Int) { state.withLock { ($0.keys, $0.version) } }

    /// Why the last fetch failed, or nil if it succeeded (or none happened yet). Never contains key material.
    package var lastFailure: String? { state.withLock { $0.lastFailure } }

    /// How long a good set is used before it is fetched again; the shortest any use of this URL asked for.
    package var refreshInterval: Duration { state.withLock { $0.refreshInterval } }

    /// Sets the refresh interval; the assembler gives the shortest of every use of the URL.
    func setRefreshInterval(_ interval: Duration) { state.withLock { $0.refreshInterval = interval } }

    /// How many fetches succeeded and failed, and how many early refreshes were granted (tests, diagnostics).
    var counts: (successes: Int, failures: Int, earlyRefreshes: Int) {
        state.withLock { ($0.successes, $0.failures, $0.earlyRefreshes) }
    }

    /// Fetches the JWKS once and installs it if it is a usable key set; returns whether it did. On any failure the
    /// previous set stays in use and the reason is logged (and kept in ``lastFailure``). Waiters of
    /// ``refreshForUnknownKey(now:timeout:)`` are released either way.
    @discardableResult
    package func refresh() async -> Bool {
        let installed = await fetchAndInstall()
        let waiters = state.withLock { state in
            defer { state.fetchWaiters = [:] }
            return Array(state.fetchWaiters.values)
        }
        for waiter in waiters { waiter.resume() }
        return installed
    }

    private func fetchAndInstall() async -> Bool {
        let body: [UInt8]
        do {
            body = try await fetcher.fetchJWKS(from: url.url)
        } catch {
            // A fetch cut short by shutdown is not the key server's fault: nothing to report.
            if Task.isCancelled { return false }
            return fail("fetching the JWKS failed: \(error)")
        }
        let keys: JWKSet
        do {
            keys = try JWKSet(json: body)
        } catch {
            // JWSKeyError names the entry and the problem, never the key's parameters.
            return fail("the response is not a usable JWKS (\(error))")
        }
        // A shared secret published at a URL is no secret: such a set would let anyone sign.
        guard !keys.keys.contains(where: \.isSymmetric) else { return fail("the JWKS holds a symmetric key") }
        guard !keys.keys.isEmpty else { return fail("the JWKS holds no public key") }
        let now = clock.monotonicNanoseconds()
        let isFirst = state.withLock { state in
            defer {
                state.keys = keys
                state.version += 1
                state.lastFailure = nil
                state.successes += 1
                state.lastSuccessAt = now
            }
            return state.keys == nil
        }
        metrics?.recordKeyFetch(url: url.url, succeeded: true)
        let keyIDs = keys.keys.map { $0.keyID ?? "-" }.joined(separator: ",")
        logger.log(level: isFirst ? .info : .debug, "JWKS loaded", metadata: ["kids": "\(keyIDs)"])
        return true
    }

    private func fail(_ reason: String) -> Bool {
        metrics?.recordKeyFetch(url: url.url, succeeded: false)
        let hasKeys = state.withLock { state in
            state.lastFailure = reason
            state.failures += 1
            return state.keys != nil
        }
        let consequence = hasKeys ? "keeping the last good key set" : "no keys yet: tokens it should verify are refused"
        logger.warning("JWKS not refreshed: \(reason); \(consequence)", metadata: ["retry_in": "\(Self.retryInterval)"])
        return false
    }

    /// Asks for a fetch now without waiting for it: a token named a `kid` the current set lacks, so the keys may
    /// have rotated. Granted at most once per ``retryInterval`` (`now` is monotonic nanoseconds). Returns whether
    /// the request was granted.
    @discardableResult
    package func requestEarlyRefresh(now: UInt64) -> Bool {
        let interval = TokenGateClock.nanoseconds(Self.retryInterval)
        let (granted, waiter) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
            if let last = state.lastEarlyRefreshAt, now < last || now - last < interval { return (false, nil) }
            state.lastEarlyRefreshAt = now
            state.earlyRefreshes += 1
            guard let waiter = state.refresherWaiter else {
                state.isRefreshPending = true
                return (true, nil)
            }
            state.refresherWaiter = nil
            return (true, waiter.continuation)
        }
        // Resumed outside the lock: the refresher's task may run at once.
        waiter?.resume()
        return granted
    }

    /// For a backend token that names an unknown `kid`: requests an early refresh and, if granted, waits for it
    /// (at most `timeout`); with no refresher running (the command line) it fetches itself. Returns whether a new
    /// set was installed meanwhile, so verifying once more can change the answer.
    package func refreshForUnknownKey(now: UInt64, timeout: Duration = .seconds(3)) async -> Bool {
        let before = state.withLock { $0.version }
        guard requestEarlyRefresh(now: now) else { return false }
        if state.withLock({ $0.refreshers == 0 }) {
            state.withLock { $0.isRefreshPending = false }
            await refresh()
        } else {
            await waitForNextFetch(upTo: timeout)
        }
        return state.withLock { $0.version } != before
    }

    private func waitForNextFetch(upTo timeout: Duration) async {
        let id = state.withLock { state in
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: timeout) }
            group.addTask {
                await withTaskCancellationHandler {
                    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                        let resumeNow = self.state.withLock { state -> Bool in
                            if Task.isCancelled { return true }
                            state.fetchWaiters[id] = continuation
                            return false
                        }
                        if resumeNow { continuation.resume() }
                    }
                } onCancel: {
                    let waiter = self.state.withLock { $0.fetchWaiters.removeValue(forKey: id) }
                    waiter?.resume()
                }
            }
            await group.next()
            group.cancelAll()
        }
    }

    /// How long the refresher should wait before its next fetch: none before the first success, the refresh
    /// interval after a success, ``retryInterval`` after a failure.
    func delayBeforeNextFetch(now: UInt64) -> Duration {
        state.withLock { state in
            if state.successes + state.failures == 0 { return .zero }
            guard state.lastFailure == nil, let last = state.lastSuccessAt else { return Self.retryInterval }
            let due = last &+ TokenGateClock.nanoseconds(state.refreshInterval)
            return due > now ? .nanoseconds(Int64(clamping: due - now)) : .zero
        }
    }

    /// Marks a refresher as running while `body` runs, so unknown-kid refreshes signal it instead of fetching.
    func withRefresher(_ body: () async -> Void) async {
        state.withLock { $0.refreshers += 1 }
        await body()
        state.withLock { $0.refreshers -= 1 }
    }

    /// Returns after `duration`, when an early refresh is requested, or when the task is cancelled, whichever
    /// comes first. Only the set's refresher waits here.
    func waitForRefreshRequest(upTo duration: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: duration) }
            group.addTask { await self.nextRefreshRequest() }
            await group.next()
            group.cancelAll()
        }
    }

    private func nextRefreshRequest() async {
        let id = state.withLock { state in
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                // Checked under the lock that the cancellation handler takes too: whichever runs first, the
                // continuation is resumed exactly once.
                let (resumeNow, displaced) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
                    if state.isRefreshPending {
                        state.isRefreshPending = false
                        return (true, nil)
                    }
                    if Task.isCancelled { return (true, nil) }
                    // Two refreshers overlap only while a reload swaps generations; the newer one takes the slot
                    // and the older one wakes (it is being cancelled anyway).
                    defer { state.refresherWaiter = (id, continuation) }
                    return (false, state.refresherWaiter?.continuation)
                }
                displaced?.resume()
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                guard let waiter = state.refresherWaiter, waiter.id == id else { return nil }
                state.refresherWaiter = nil
                return waiter.continuation
            }
            waiter?.resume()
        }
    }
}
