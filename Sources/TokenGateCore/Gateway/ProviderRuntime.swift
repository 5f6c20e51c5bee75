import Logging

/// Everything one provider needs at request time, built once when the configuration loads.
final class ProviderRuntime: Sendable {
    let provider: Provider
    let authenticator: CallerAuthenticator
    let cache: TokenCache<TokenCacheKey, CachedToken>
    let providerLimiter: RateLimiter<ProviderID>?
    let callerLimiter: RateLimiter<AuthenticatedCaller>?
    let contextLimiter: RateLimiter<TokenContext>?

    init(provider: Provider, clock: TokenGateClock) {
        let settings = provider.settings
        self.provider = provider
        self.authenticator = CallerAuthenticator(provider: settings.id, clients: settings.clients, clock: clock)
        self.cache = TokenCache(policy: settings.cache, clock: clock)
        self.providerLimiter = settings.rateLimits.provider.map { RateLimiter(limit: $0, clock: clock) }
        self.callerLimiter = settings.rateLimits.caller.map { RateLimiter(limit: $0, clock: clock) }
        self.contextLimiter = settings.rateLimits.context.map { RateLimiter(limit: $0, clock: clock) }
    }

    /// Applies the provider, caller and context limits in that order; the first refusal wins.
    func checkRateLimits(caller: AuthenticatedCaller, context: TokenContext) throws(TokenGateError) {
        try Self.check(providerLimiter?.acquire(provider.id), level: "provider")
        try Self.check(callerLimiter?.acquire(caller), level: "caller")
        try Self.check(contextLimiter?.acquire(context), level: "context")
    }

    private static func check(_ decision: RateLimitDecision?, level: StaticString) throws(TokenGateError) {
        if let seconds = decision?.retryAfterSeconds {
            throw TokenGateError(.rateLimited, "\(level) rate limit reached", retryAfterSeconds: seconds)
        }
    }
}
