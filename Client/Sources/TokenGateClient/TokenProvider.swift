public import Foundation

/// Hands out Fleet Engine tokens from a TokenGate gateway: cached per context, refreshed ahead of expiry, fetched
/// once however many callers wait, retried with backoff, and typed on failure.
///
/// ```swift
/// let provider = TokenProvider(
///     configuration: .init(baseURL: URL(string: "https://tokens.example.com")!, providerID: "acme-rides")
/// ) { try await session.currentAccessToken() }
///
/// let jwt = try await provider.token(for: .trip("trip-42"))   // any thread, any number of callers
/// await provider.switchTo(.trip("trip-43"))                   // the rider moved on: drop trip-42's token
/// ```
///
/// Caching, per context (the browser and Android clients do the same: docs/client.md has the table):
/// - A token is served while more than ``Configuration/refreshMargin`` (5 minutes) of life remains; below that,
///   callers wait for a fresh one.
/// - From its `refreshAfter` (the gateway's, else 10 minutes before expiry) a call still gets the cached token and
///   starts one background fetch; after a failed fetch the context is not asked for again before
///   ``Configuration/backgroundRetryInterval`` while its cached token can be served.
/// - A fetch that fails for any reason but a refusal (network, 5xx, 429, an unusable answer, the credential source)
///   still answers with the cached token when that has at least ``Configuration/minimumRemaining`` (2 minutes) left.
///   Only network failures, 5xx and 429 are retried first (``RetryPolicy``).
/// - The gateway's refusals (400, 401, 403, 404, 410) drop the cached token. A 410 (`contextEnded`) is remembered:
///   the context is refused without a request until ``clear(_:)`` or ``clearAll()``. A 429's `Retry-After` too long
///   to wait for cools the context down: no request before it has passed (the cached token is served meanwhile while
///   it has ``Configuration/minimumRemaining`` left).
/// - At most one fetch per context is in flight; every caller for that context joins it. A cancelled caller stops
///   waiting with `CancellationError`; the fetch goes on for the others.
/// - At most ``Configuration/maximumContexts`` contexts are kept (least recently used dropped first);
///   ``switchTo(_:)``, ``retain(only:)``, ``clear(_:)`` and ``clearAll()`` drop them explicitly. A fetch in flight
///   for a dropped context still answers its callers but is not cached.
///
/// Expiry is derived from the body as ``TokenResponseFormat`` describes, on this device's clock (see
/// `TokenResponseParser` for the legacy `exp` cross-check). Thread safety: the provider is an actor; cache state
/// changes only on it, and network work runs off it in a `Sendable` fetcher.
public actor TokenProvider {
    /// Returns the app's current credential for the gateway: the signed-in user's session token, or an API key.
    /// Asked before every attempt, so a refreshed session is picked up by retries.
    public typealias CredentialSource = @Sendable () async throws -> String

    /// The configuration the provider was made with.
    public nonisolated let configuration: Configuration
    private let fetcher: TokenFetcher
    private let clock: any TokenClock

    private struct Fetch {
        let id: UInt64
        let task: Task<FleetEngineToken, any Error>
    }

    private struct Entry {
        var token: FleetEngineToken?
        var fetch: Fetch?
        var lastUse: UInt64
        /// No new fetch before this while the cached token can be served: set after a failure, and after a token
        /// that arrived already due for refresh.
        var retryNotBefore: Date?
        /// A 429's `Retry-After`: no request for this context before `until`.
        var coolingDown: (until: Date, error: TokenGateClientError)?
    }

    /// The most ended contexts remembered; the oldest is forgotten beyond it (it is then asked once more).
    private static let maximumEndedContexts = 256

    private var entries: [TokenContext: Entry] = [:]
    /// Contexts answered 410, each with its error and the order it came in.
    private var ended: [TokenContext: (error: TokenGateClientError, order: UInt64)] = [:]
    private var useCounter: UInt64 = 0
    private var fetchCounter: UInt64 = 0

    /// A provider for `configuration`, asking `credential` for the app's credential before each request.
    /// - Parameters:
    ///   - transport: how requests are sent; default ``URLSessionTransport``.
    ///   - clock: "now" and backoff sleeps; default ``SystemTokenClock``.
    public init(
        configuration: Configuration, transport: any HTTPTransport = URLSessionTransport(),
        clock: any TokenClock = SystemTokenClock(), credential: @escaping CredentialSource
    ) {
        self.configuration = configuration
        self.clock = clock
        self.fetcher = TokenFetcher(
            configuration: configuration, credential: credential, transport: transport, clock: clock)
    }

    /// A provider for the gateway at `baseURL` serving `providerID`, with default caching and retries.
    public init(baseURL: URL, providerID: String, credential: @escaping CredentialSource) {
        self.init(configuration: Configuration(baseURL: baseURL, providerID: providerID), credential: credential)
    }

    /// A token for `context` with more than ``Configuration/refreshMargin`` of life left (or, while a fresh one cannot
    /// be had for a reason other than a refusal, at least ``Configuration/minimumRemaining``): the cached one, or a
    /// fresh one fetched once for all waiting callers.
    /// - Throws: ``TokenGateClientError`` (`unauthenticated`: re-authenticate; `forbidden`: not allowed; …).
    public func token(for context: TokenContext) async throws -> String {
        try await fleetEngineToken(for: context).token
    }

    /// Like ``token(for:)``, with the token's context and deadlines.
    public func fleetEngineToken(for context: TokenContext) async throws -> FleetEngineToken {
        try refuseIfEnded(context)
        let now = clock.now
        let entry = touch(context)
        if let cached = entry.token {
            if now < cached.expiresAt.addingTimeInterval(-configuration.refreshMargin) {
                if now >= cached.refreshAfter, entry.fetch == nil, !isPaced(entry, at: now) {
                    _ = startFetch(for: context)
                }
                return cached
            }
            // Below the margin, but a fetch failed a moment ago: the token still serves, the gateway is not asked
            // again at every call.
            if isUsable(cached, at: now), entry.retryNotBefore.map({ now < $0 }) ?? false { return cached }
        }
        if entry.fetch == nil, let cooling = entry.coolingDown, now < cooling.until {
            if let cached = entry.token, isUsable(cached, at: now) { return cached }
            throw Self.stillCoolingDown(cooling, at: now)
        }
        do {
            return try await join(context)
        } catch let error as TokenGateClientError where !error.isRefusal {
            // Not a refusal: the token cached for this context is still good enough while it has minimumRemaining.
            if let cached = entries[context]?.token, isUsable(cached, at: clock.now) { return cached }
            throw error
        }
    }

    /// Fetches a fresh token for `context` now (joining a fetch already in flight) and caches it; throws what the
    /// fetch threw. An ended context, or one cooling down after a 429, is refused without a request.
    @discardableResult
    public func refresh(_ context: TokenContext) async throws -> FleetEngineToken {
        try refuseIfEnded(context)
        let entry = touch(context)
        let now = clock.now
        if entry.fetch == nil, let cooling = entry.coolingDown, now < cooling.until {
            throw Self.stillCoolingDown(cooling, at: now)
        }
        return try await join(context)
    }

    /// The app now works on `context`: drops every other cached context of the same kind (the previous trip or
    /// vehicle), keeping other kinds.
    public func switchTo(_ context: TokenContext) {
        entries = entries.filter { $0.key.kind != context.kind || $0.key == context }
    }

    /// Drops every cached context except `contexts`.
    public func retain(only contexts: some Sequence<TokenContext>) {
        let kept = Set(contexts)
        entries = entries.filter { kept.contains($0.key) }
    }

    /// Drops `context`'s cached token and forgets that it ended or is cooling down.
    public func clear(_ context: TokenContext) {
        entries[context] = nil
        ended[context] = nil
    }

    /// Drops every cached token and everything remembered (sign-out).
    public func clearAll() {
        entries.removeAll()
        ended.removeAll()
    }

    /// The contexts that currently hold a cached token.
    public var cachedContexts: Set<TokenContext> {
        Set(entries.compactMap { $0.value.token == nil ? nil : $0.key })
    }

    // MARK: - Cache bookkeeping (actor-isolated: no suspension between reading and writing an entry)

    /// Marks `context` as just used, creating its entry and evicting the least recently used one beyond the bound.
    @discardableResult
    private func touch(_ context: TokenContext) -> Entry {
        useCounter += 1
        entries[context, default: Entry(lastUse: useCounter)].lastUse = useCounter
        while entries.count > configuration.maximumContexts,
            let oldest = entries.min(by: { $0.value.lastUse < $1.value.lastUse })?.key, oldest != context
        {
            entries[oldest] = nil
        }
        return entries[context]!
    }

    private func refuseIfEnded(_ context: TokenContext) throws(TokenGateClientError) {
        guard let error = ended[context]?.error else { return }
        throw TokenGateClientError(
            code: error.code, status: error.status, serverCode: error.serverCode,
            message: error.message + " (remembered: no request sent)", underlying: error)
    }

    private func isUsable(_ token: FleetEngineToken, at now: Date) -> Bool {
        token.expiresAt.timeIntervalSince(now) >= configuration.minimumRemaining
    }

    private func isPaced(_ entry: Entry, at now: Date) -> Bool {
        (entry.retryNotBefore.map { now < $0 } ?? false) || (entry.coolingDown.map { now < $0.until } ?? false)
    }

    private static func stillCoolingDown(_ cooling: (until: Date, error: TokenGateClientError), at now: Date)
        -> TokenGateClientError
    {
        TokenGateClientError(
            code: .rateLimited, status: cooling.error.status, serverCode: cooling.error.serverCode,
            retryAfter: cooling.until.timeIntervalSince(now).rounded(.up),
            message: "rate limited: not asking again before Retry-After has passed", underlying: cooling.error)
    }

    private func join(_ context: TokenContext) async throws -> FleetEngineToken {
        let task = entries[context]?.fetch?.task ?? startFetch(for: context)
        return try await CancellableWait.value(of: task)
    }

    private func startFetch(for context: TokenContext) -> Task<FleetEngineToken, any Error> {
        fetchCounter += 1
        let id = fetchCounter
        let fetcher = self.fetcher
        // The task is isolated to this actor (it uses `self`), so `finish` runs before any waiter resumes and
        // the next caller finds the new token cached; `fetcher.fetch` is nonisolated and runs off the actor.
        let task = Task {
            let result: Result<FleetEngineToken, any Error>
            do {
                result = .success(try await fetcher.fetch(context))
            } catch {
                result = .failure(error)
            }
            self.finish(context, fetch: id, with: result)
            return try result.get()
        }
        entries[context]?.fetch = Fetch(id: id, task: task)
        return task
    }

    private func finish(_ context: TokenContext, fetch id: UInt64, with result: Result<FleetEngineToken, any Error>) {
        // A context cleared, evicted or switched away from meanwhile is not resurrected.
        guard var entry = entries[context], entry.fetch?.id == id else { return }
        entry.fetch = nil
        let now = clock.now
        switch result {
        case .success(let token):
            entry.token = token
            entry.retryNotBefore = nil
            entry.coolingDown = nil
            // A token already due for refresh is what a gateway serves while it refreshes behind it: ask again
            // soon, and always before the margin, so callers never end up waiting on the network at the margin.
            if token.refreshAfter <= now {
                let untilMargin = token.expiresAt.addingTimeInterval(-configuration.refreshMargin).timeIntervalSince(now)
                entry.retryNotBefore = now.addingTimeInterval(
                    min(configuration.backgroundRetryInterval, max(0, untilMargin / 2))
                )
            }
        case .failure(let error):
            entry.retryNotBefore = now.addingTimeInterval(configuration.backgroundRetryInterval)
            if let error = error as? TokenGateClientError {
                if error.code == .contextEnded {
                    entries[context] = nil
                    remember(ended: context, error)
                    return
                }
                if error.isRefusal { entry.token = nil }
                if error.code == .rateLimited, let retryAfter = error.retryAfter {
                    entry.coolingDown = (now.addingTimeInterval(retryAfter), error)
                }
            }
        }
        entries[context] = entry
    }

    private func remember(ended context: TokenContext, _ error: TokenGateClientError) {
        useCounter += 1
        ended[context] = (error, useCounter)
        if ended.count > Self.maximumEndedContexts, let oldest = ended.min(by: { $0.value.order < $1.value.order })?.key {
            ended[oldest] = nil
        }
    }
}
