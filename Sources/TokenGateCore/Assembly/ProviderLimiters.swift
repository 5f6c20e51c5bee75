/// One provider's rate limiters: per provider, caller and context for requests that authenticated, and per provider
/// and per peer address for failed authentications.
///
/// The failed-authentication limiters are only *looked at* before a credential is (no bucket is taken by a good
/// request) and are *charged* when authentication fails, so a flood of bad credentials from one address, or from
/// many against one provider, is refused with 429 before any hashing or signature work, while callers with good
/// credentials are never slowed by it.
final class ProviderLimiters: Sendable {
    let provider: RateLimiter<ProviderID>?
    let caller: RateLimiter<AuthenticatedCaller>?
    let context: RateLimiter<TokenContext>?
    let failedAuth: RateLimiter<ProviderID>?
    let failedAuthPerPeer: RateLimiter<PeerAddress>?

    init(_ settings: RateLimitSettings, clock: TokenGateClock) {
        provider = settings.provider.map { RateLimiter(limit: $0, clock: clock) }
        caller = settings.caller.map { RateLimiter(limit: $0, clock: clock) }
        context = settings.context.map { RateLimiter(limit: $0, clock: clock) }
        failedAuth = settings.failedAuth.map { RateLimiter(limit: $0, clock: clock) }
        failedAuthPerPeer = settings.failedAuthPerPeer.map { RateLimiter(limit: $0, clock: clock) }
    }

    /// Refuses the request when failed authentications from `peer`, or at this provider, are over their limit.
    func checkFailedAuthentications(at id: ProviderID, from peer: PeerAddress?, metrics: ProviderMetrics) throws(TokenGateError) {
        try Self.check(failedAuth?.peek(id), scope: .failedAuth, metrics)
        if let peer { try Self.check(failedAuthPerPeer?.peek(peer), scope: .failedAuthPerPeer, metrics) }
    }

    /// Counts one failed authentication against the provider and `peer`.
    func chargeFailedAuthentication(at id: ProviderID, from peer: PeerAddress?) {
        _ = failedAuth?.acquire(id)
        if let peer { _ = failedAuthPerPeer?.acquire(peer) }
    }

    /// Applies the provider, caller and context limits in that order; the first refusal wins.
    func check(provider id: ProviderID, caller: AuthenticatedCaller, context: TokenContext, metrics: ProviderMetrics) throws(TokenGateError) {
        try Self.check(provider?.acquire(id), scope: .provider, metrics)
        try Self.check(self.caller?.acquire(caller), scope: .caller, metrics)
        try Self.check(self.context?.acquire(context), scope: .context, metrics)
    }

    private static func check(
        _ decision: RateLimitDecision?, scope: ProviderMetrics.RateLimitScope, _ metrics: ProviderMetrics
    ) throws(TokenGateError) {
        if let seconds = decision?.retryAfterSeconds {
            metrics.recordRateLimited(scope)
            throw TokenGateError(.rateLimited, "\(scope.rawValue) rate limit reached", retryAfterSeconds: seconds)
        }
    }
}

/// A caller's IP address as a number, so a per-address bucket costs no string: IPv4 in the low 32 bits, IPv6 as
/// its 128 bits.
public struct PeerAddress: Hashable, Sendable, CustomStringConvertible {
    /// The address bits.
    public let bits: UInt128
    /// Whether it is IPv6 (an IPv4 address and the IPv6 address with the same low bits differ).
    public let isIPv6: Bool

    /// An IPv4 address in host byte order.
    public init(ipv4: UInt32) {
        bits = UInt128(ipv4)
        isIPv6 = false
    }

    /// An IPv6 address from its 16 bytes, most significant first.
    public init(ipv6 bytes: some Collection<UInt8>) {
        bits = bytes.reduce(0) { $0 << 8 | UInt128($1) }
        isIPv6 = true
    }

    /// Dotted quad, or eight groups of hex (uncompressed).
    public var description: String {
        if !isIPv6 { return (0..<4).map { String(UInt8(truncatingIfNeeded: bits >> (24 - 8 * $0))) }.joined(separator: ".") }
        return (0..<8).map { String(UInt16(truncatingIfNeeded: bits >> (112 - 16 * $0)), radix: 16) }.joined(separator: ":")
    }
}
