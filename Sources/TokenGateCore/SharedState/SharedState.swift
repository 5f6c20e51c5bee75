import JOSE
package import Logging
import OpenSSLPrimitives
import Synchronization

/// The gateway's side of the store replicas share: the Redis key names, sealing, and what happens when the store
/// fails.
///
/// A failed or late call marks the store down for a second: meanwhile every call is answered locally at once
/// (tokens minted here, limits at this replica's share) instead of waiting out a deadline per request. The first
/// call after that tries the store again. Both transitions are logged once and show in
/// `tokengate_shared_state_up`. A command the store answered with a refusal (``SharedStoreCommandRefusal``: one
/// key of the wrong type, an ACL rule) falls back for that call alone: the store is up.
package final class SharedState: Sendable {
    /// The settings it was made with.
    package let settings: SharedStateSettings
    let store: any SharedStore
    let metrics: SharedStateMetrics
    let logger: Logger
    let clock: TokenGateClock
    private let health = Mutex(Health())
    /// Replicas waiting for another's mint, woken when it is stored.
    let storedValues = StoredValueNotices()
    /// Whether this replica's subscription to the store's messages holds: waiters then rely on being told, and
    /// poll only as a fallback.
    let isWatching = Atomic<Bool>(false)
    /// Rate-limit keys made lately: every limited request needs its keys, and each is a SHA-256 and some string
    /// building. Emptied when it holds ``rateKeysKept``.
    private let rateKeys = Mutex<[RateKeyName: String]>([:])
    static let rateKeysKept = 4096
    /// How long the store is left alone after a failure.
    static let retryAfterFailure: Duration = .seconds(1)

    private struct Health {
        var isUp = true
        var retryAt: UInt64 = 0
        /// When a refusal was last logged, and how many since.
        var refusalLoggedAt: UInt64?
        var refusalsUnlogged = 0
    }

    /// One log line about refused commands at most this often.
    static let refusalLogInterval: Duration = .seconds(10)

    /// What a store call was for, in logs and metrics.
    enum Operation: String, CaseIterable {
        case read, write, lock, unlock
        case rateLimit = "rate_limit"
        case distinctContexts = "distinct_contexts"
        case publish, lift, subscribe
    }

    /// Shares through `store` as `settings` say.
    package init(settings: SharedStateSettings, store: any SharedStore, metrics: GatewayMetrics, clock: TokenGateClock = .system, logger: Logger) {
        self.settings = settings
        self.store = store
        self.metrics = SharedStateMetrics(factory: metrics.factory)
        self.clock = clock
        self.logger = logger
        self.metrics.recordUp(true)
    }

    /// Closes the store's connections (at shutdown).
    package func shutdown() async { await store.shutdown() }

    /// Whether the last call reached the store.
    package var isUp: Bool { health.withLock { $0.isUp } }

    /// Runs `body` against the store unless it is marked down; nil when it is, or when `body` fails (which marks
    /// it down).
    func attempt<Result: Sendable>(_ operation: Operation, _ body: () async throws -> Result) async -> Result? {
        guard mayCall() else { return nil }
        do {
            let result = try await body()
            recordSuccess(operation)
            return result
        } catch {
            recordFailure(error, operation)
            return nil
        }
    }

    /// ``attempt(_:_:)`` for a call that answers through a callback: `start` starts it (unless the store is marked
    /// down) and hands it where to answer; `completion` is called once, with the result or nil, at once when the
    /// store is marked down.
    func attempt<Result: Sendable>(
        _ operation: Operation, start: (@escaping @Sendable (Swift.Result<Result, any Error>) -> Void) -> Void,
        completion: @escaping @Sendable (Result?) -> Void
    ) {
        guard mayCall() else { return completion(nil) }
        start { result in
            switch result {
            case .success(let value):
                self.recordSuccess(operation)
                completion(value)
            case .failure(let error):
                self.recordFailure(error, operation)
                completion(nil)
            }
        }
    }

    /// Whether the store may be called now: it is up, or its time out after a failure is over.
    private func mayCall() -> Bool {
        let now = clock.monotonicNanoseconds()
        return health.withLock { $0.isUp || now >= $0.retryAt }
    }

    private func recordSuccess(_ operation: Operation) {
        let recovered = health.withLock { health in
            defer { health.isUp = true }
            return !health.isUp
        }
        if recovered {
            metrics.recordUp(true)
            logger.notice("shared state reachable again; sharing tokens and limits", metadata: ["operation": "\(operation.rawValue)"])
        }
    }

    /// A refusal is logged (the store stays up); any other failure marks the store down for ``retryAfterFailure``.
    private func recordFailure(_ error: any Error, _ operation: Operation) {
        metrics.recordError(operation)
        if let refusal = error as? SharedStoreCommandRefusal { return logRefusal(refusal, operation) }
        let retryAt = clock.monotonicNanoseconds() &+ TokenGateClock.nanoseconds(Self.retryAfterFailure)
        let wentDown = health.withLock { health in
            defer {
                health.isUp = false
                health.retryAt = retryAt
            }
            return health.isUp
        }
        if wentDown {
            metrics.recordUp(false)
            logger.error(
                "shared state unreachable; serving from this replica's cache and minting locally, limits at this replica's share",
                metadata: ["operation": "\(operation.rawValue)", "error": "\(error)", "replicas": "\(settings.replicas)"])
        }
    }

    /// Logs a refused command, at most once per ``refusalLogInterval`` with the count since the last line.
    private func logRefusal(_ refusal: SharedStoreCommandRefusal, _ operation: Operation) {
        let now = clock.monotonicNanoseconds()
        let count: Int? = health.withLock { health in
            health.refusalsUnlogged += 1
            if let last = health.refusalLoggedAt, now &- last < TokenGateClock.nanoseconds(Self.refusalLogInterval) { return nil }
            health.refusalLoggedAt = now
            defer { health.refusalsUnlogged = 0 }
            return health.refusalsUnlogged
        }
        guard let count else { return }
        logger.warning(
            "the shared store refused a command; that call was answered locally, the store stays in use",
            metadata: ["operation": "\(operation.rawValue)", "code": "\(refusal.code)", "refused": "\(count)"])
    }

    // MARK: Keys

    /// `tokengate:token:{TAG}:type:digest`: the sealed token of one context. The hash tag is the entity an end names
    /// (`provider:kind:digest`), or for a context no end names the context itself: a token, its lock and its
    /// entity's end share a Redis Cluster slot, so one script checks the end and reads the token, and one provider's
    /// contexts spread over every shard.
    func tokenKey(_ key: TokenCacheKey) -> String { contextKey("token", key) }

    /// `tokengate:lock:{TAG}:type:digest`: the mint lock of one context.
    func lockKey(_ key: TokenCacheKey) -> String { contextKey("lock", key) }

    private func contextKey(_ kind: String, _ key: TokenCacheKey) -> String {
        let (type, context) = (key.context.tokenType.rawValue, Self.digest(key.context.identity))
        guard let ended = EndedContexts.Key(provider: key.provider, context: key.context) else {
            return "\(settings.keyPrefix)\(kind):{\(key.provider):\(type):\(context)}"
        }
        return "\(settings.keyPrefix)\(kind):{\(entityTag(ended))}:\(type):\(context)"
    }

    /// `tokengate:ended:{provider:kind:digest}`: one ended entity, until it expires.
    func endedKey(_ key: EndedContexts.Key) -> String { "\(settings.keyPrefix)ended:{\(entityTag(key))}" }

    /// `tokengate:ended-index:{provider}`: one provider's ends by expiry, to bound how many it holds.
    func endedIndexKey(_ provider: ProviderID) -> String { "\(settings.keyPrefix)ended-index:{\(provider)}" }

    /// `tokengate:token-index:{provider}`: one provider's stored tokens by expiry, to bound how many it stores.
    func tokenIndexKey(_ provider: ProviderID) -> String { "\(settings.keyPrefix)token-index:{\(provider)}" }

    /// An ended entity's entry in its provider's index.
    func endedEntry(_ key: EndedContexts.Key) -> String { "\(key.kind.rawValue):\(Self.digest(key.id.rawValue))" }

    private func entityTag(_ key: EndedContexts.Key) -> String { "\(key.provider):\(endedEntry(key))" }

    /// A rate-limit bucket: `scope` and a digest of who or what it limits. The provider is the hash tag: one request's
    /// buckets (provider, caller, context) are charged by one script, so they must share a slot.
    func rateKey(provider: ProviderID, scope: String, identity: String) -> String {
        let name = RateKeyName(provider: provider, scope: scope, identity: identity)
        if let key = rateKeys.withLock({ $0[name] }) { return key }
        let key = "\(settings.keyPrefix)rate:{\(provider)}:\(scope):\(Self.digest(identity))"
        rateKeys.withLock { keys in
            if keys.count >= Self.rateKeysKept { keys.removeAll(keepingCapacity: true) }
            keys[name] = key
        }
        return key
    }

    private struct RateKeyName: Hashable {
        var provider: ProviderID
        var scope: String
        var identity: String
    }

    /// A caller's set of distinct contexts for one cap (`scope`: `all` or a token type) in one window: the window's
    /// number is in the name, so a new window starts with an empty set and the old one lapses.
    func distinctContextsKey(provider: ProviderID, scope: String, window: Int64, caller: String) -> String {
        "\(settings.keyPrefix)distinct:{\(provider)}:\(scope):\(window):\(Self.digest(caller))"
    }

    /// What a distinct-contexts set holds for `context`: a digest, so no trip ID sits in the store in clear.
    func distinctContextsMember(_ context: TokenContext) -> String { Self.digest("\(context.tokenType.rawValue) \(context.identity)") }

    /// 32 hex digits of SHA-256: bounded key length whatever the context, no delimiter in it.
    private static func digest(_ text: String) -> String {
        let bytes = (try? Digest.sha256(Array(text.utf8))) ?? Array(text.utf8)
        return HexBytes.encode(Array(bytes.prefix(16)))
    }

    // MARK: Sealing

    /// The token sealed for `storeKey` (which is authenticated with it: a value moved to another key does not open).
    func seal(_ compact: String, for storeKey: String) -> [UInt8]? {
        try? AESGCM.seal(Array(compact.utf8), key: settings.encryptionKey, associatedData: Array(storeKey.utf8))
    }

    /// The token a sealed value holds, or nil for anything that does not open.
    func open(_ box: [UInt8], for storeKey: String) -> String? {
        guard let plain = try? AESGCM.open(box, key: settings.encryptionKey, associatedData: Array(storeKey.utf8)) else { return nil }
        return String(validating: plain, as: UTF8.self)
    }
}
