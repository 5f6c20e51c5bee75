public import JOSE
public import Logging
import Synchronization

/// An identity provider's JWKS fetched from a URL (`jwksUrl:`): the latest good key set, shared by the
/// ``CallerAuthenticator`` that reads it on every session token and the one ``SessionKeyRefresher`` that fills it.
///
/// Read-mostly state behind a `Mutex`, no actor: ``current()`` is a lock and a copy, so authentication stays
/// synchronous and cheap. Creating a key set fetches nothing; the configuration loader only creates them, and the
/// first fetch happens when `serve` starts the refresher. Until then, or while every fetch has failed, there is
/// no key set and session tokens of its client are refused ("identity provider keys not loaded yet").
///
/// A failed fetch, a body that is not a JWKS, or a JWKS without a public key keeps the last good set: an identity
/// provider that is down for a while must not lock every app user out. Failures are logged with a reason, never
/// with key material.
///
/// ```swift
/// let keys = RemoteKeySet(url: "https://login.acme.test/.well-known/jwks.json")
/// await keys.refresh(using: fetcher, logger: logger)   // what SessionKeyRefresher does on its schedule
/// let verifier = keys.current().map { JWTVerifier(keys: $0) }
/// ```
public final class RemoteKeySet: Sendable {
    /// How soon a failed fetch is retried, and the least time between two early refreshes requested for an
    /// unknown `kid`: retry fast after a failure, refresh slowly after a success.
    public static let retryInterval: Duration = .seconds(30)

    struct State {
        var keys: JWKSet?
        var lastFailure: String?
        var successes = 0
        var failures = 0
        var earlyRefreshes = 0
        /// Monotonic nanoseconds of the last early refresh granted, for the rate limit.
        var lastEarlyRefreshAt: UInt64?
        /// An early refresh was granted while the refresher was busy; its next wait returns at once.
        var isRefreshPending = false
        /// The refresher waiting for an early refresh request (at most one: one refresher per key set).
        var waiter: CheckedContinuation<Void, Never>?
    }

    /// The JWKS URL.
    public let url: String
    /// How long a good key set is used before it is fetched again.
    public let refreshInterval: Duration
    private let state = Mutex(State())

    /// A key set for `url`, empty until the first successful ``refresh(using:logger:)``. Fetches nothing.
    public init(url: String, refreshInterval: Duration = .seconds(3600)) {
        self.url = url
        self.refreshInterval = refreshInterval
    }

    /// The latest good key set, or nil if no fetch has succeeded yet.
    public func current() -> JWKSet? { state.withLock { $0.keys } }

    /// Why the last fetch failed, or nil if it succeeded (or none happened yet). Never contains key material.
    public var lastFailure: String? { state.withLock { $0.lastFailure } }

    /// How many fetches succeeded and failed, and how many early refreshes were granted (tests, diagnostics).
    var counts: (successes: Int, failures: Int, earlyRefreshes: Int) {
        state.withLock { ($0.successes, $0.failures, $0.earlyRefreshes) }
    }

    /// Fetches the JWKS once and installs it if it is a usable key set; returns whether it did. On any failure the
    /// previous set stays in use and the reason is logged (and kept in ``lastFailure``).
    @discardableResult
    public func refresh(using fetcher: any JWKSFetcher, logger: Logger) async -> Bool {
        let body: [UInt8]
        do {
            body = try await fetcher.fetchJWKS(from: url)
        } catch {
            // A fetch cut short by shutdown is not the identity provider's fault: nothing to report.
            if Task.isCancelled { return false }
            return fail("fetching the JWKS failed: \(error)", logger: logger)
        }
        let keys: JWKSet
        do {
            keys = try JWKSet(json: body)
        } catch {
            // JWSKeyError names the entry and the problem, never the key's parameters.
            return fail("the response is not a usable JWKS (\(error))", logger: logger)
        }
        guard keys.keys.contains(where: { !$0.isSymmetric }) else {
            return fail("the JWKS holds no public key", logger: logger)
        }
        let isFirst = state.withLock { state in
            defer {
                state.keys = keys
                state.lastFailure = nil
                state.successes += 1
            }
            return state.keys == nil
        }
        let keyIDs = keys.keys.map { $0.keyID ?? "-" }.joined(separator: ",")
        logger.log(
            level: isFirst ? .info : .debug, "identity provider keys loaded",
            metadata: ["jwks_url": "\(url)", "kids": "\(keyIDs)"])
        return true
    }

    private func fail(_ reason: String, logger: Logger) -> Bool {
        let hasKeys = state.withLock { state in
            state.lastFailure = reason
            state.failures += 1
            return state.keys != nil
        }
        let consequence = hasKeys ? "keeping the last good key set" : "no keys yet: its session tokens are refused"
        logger.warning(
            "identity provider keys not refreshed: \(reason); \(consequence)",
            metadata: ["jwks_url": "\(url)", "retry_in": "\(Self.retryInterval)"])
        return false
    }

    /// Asks the refresher to fetch now, without waiting for it: a session token named a `kid` the current set
    /// lacks, so the identity provider may have rotated its keys. Granted at most once per ``retryInterval``
    /// (`now` is monotonic nanoseconds), so a flood of forged kids costs one fetch per interval. Returns whether
    /// the request was granted.
    @discardableResult
    func requestEarlyRefresh(now: UInt64) -> Bool {
        let interval = UInt64(Self.retryInterval.components.seconds) * 1_000_000_000
        let (granted, waiter) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
            if let last = state.lastEarlyRefreshAt, now < last || now - last < interval { return (false, nil) }
            state.lastEarlyRefreshAt = now
            state.earlyRefreshes += 1
            guard let waiter = state.waiter else {
                state.isRefreshPending = true
                return (true, nil)
            }
            state.waiter = nil
            return (true, waiter)
        }
        // Resumed outside the lock: the refresher's task may run at once.
        waiter?.resume()
        return granted
    }

    /// Returns after `duration`, when an early refresh is requested, or when the task is cancelled, whichever
    /// comes first. Only one task (the key set's refresher) may wait at a time.
    func waitForRefreshRequest(upTo duration: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: duration) }
            group.addTask { await self.nextRefreshRequest() }
            await group.next()
            group.cancelAll()
        }
    }

    private func nextRefreshRequest() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                // Checked under the lock that the cancellation handler takes too: whichever runs first, the
                // continuation is resumed exactly once.
                let resumeNow = state.withLock { state -> Bool in
                    if state.isRefreshPending {
                        state.isRefreshPending = false
                        return true
                    }
                    if Task.isCancelled { return true }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }
}
