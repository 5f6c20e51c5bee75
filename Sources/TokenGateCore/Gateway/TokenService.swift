import JOSE
public import Logging

/// The gateway's one job, without HTTP: turn a raw token request into a verified token or a coded error.
///
/// Order matters and is cheap-first: provider, token type and context are validated before any credential is
/// looked at; authentication and authorization before rate limits; rate limits before the cache; the backend and
/// the OpenSSL verification only on a cache miss. A cache hit does no signing and no signature check: the token
/// was verified when it entered the cache.
public final class TokenService: Sendable {
    private let runtimes: [ProviderID: ProviderRuntime]
    private let directory: CallerDirectory
    private let clock: TokenGateClock
    private let logger: Logger

    /// Builds the per-provider state (authenticators, caches, limiters) for a loaded configuration.
    public init(configuration: LoadedConfiguration, clock: TokenGateClock = .system, logger: Logger) {
        var runtimes: [ProviderID: ProviderRuntime] = [:]
        for (id, provider) in configuration.providers { runtimes[id] = ProviderRuntime(provider: provider, clock: clock) }
        self.runtimes = runtimes
        self.directory = CallerDirectory(runtimes.mapValues(\.authenticator))
        self.clock = clock
        self.logger = logger
    }

    /// The providers served, by ID.
    public var providers: [ProviderID: Provider] { runtimes.mapValues(\.provider) }

    /// A verified token for `query`, or a `TokenGateError` with a stable code. Denials are logged with their code.
    public func token(for query: TokenQuery) async throws(TokenGateError) -> TokenGrant {
        do {
            return try await grant(query)
        } catch {
            // Only validated values reach the log: path segments are attacker-controlled text.
            var metadata: Logger.Metadata = ["code": "\(error.code)"]
            metadata["provider"] = "\(ProviderID(query.providerID)?.rawValue ?? "(invalid)")"
            metadata["type"] = "\(TokenType(rawValue: query.tokenType)?.rawValue ?? "(invalid)")"
            logger.log(level: error.code == .backendInvalidToken ? .error : .info, "token request denied: \(error.reason)", metadata: metadata)
            throw error
        }
    }

    private func grant(_ query: TokenQuery) async throws(TokenGateError) -> TokenGrant {
        guard let id = ProviderID(query.providerID), let runtime = runtimes[id] else {
            throw TokenGateError(.unknownProvider, "no provider with that ID")
        }
        guard let type = TokenType(rawValue: query.tokenType) else {
            throw TokenGateError(.unknownTokenType, "no such token type; expected one of: \(TokenType.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard runtime.provider.backend.tokenTypes.contains(type) else {
            throw TokenGateError(.unknownTokenType, "provider \(id) does not issue \(type) tokens")
        }
        let context: TokenContext
        do {
            context = try TokenContext.parse(type: type, parameters: query.parameters)
        } catch {
            throw TokenGateError(.invalidRequest, error.description)
        }
        let caller = try authenticate(query.authorization, at: runtime)
        try runtime.authenticator.authorize(caller, for: context)
        try runtime.checkRateLimits(caller: caller, context: context)
        let key = TokenCacheKey(provider: id, context: context)
        do {
            let (cached, outcome) = try await runtime.cache.value(for: key) { [self] in
                let token = try await self.fetchVerified(context, from: runtime)
                return CachedToken(token: token, body: RenderedTokenBody(token: token, context: context, provider: runtime.provider.settings))
            }
            return TokenGrant(
                token: cached.token, context: context, provider: runtime.provider.settings, outcome: outcome, body: cached.body)
        } catch let error as TokenGateError {
            throw error
        } catch is CancellationError {
            throw TokenGateError(.backendUnavailable, "the request was cancelled")
        } catch {
            throw TokenGateError(.backendError, "the backend failed: \(Swift.type(of: error))")
        }
    }

    private func authenticate(_ authorization: String?, at runtime: ProviderRuntime) throws(TokenGateError) -> AuthenticatedCaller {
        do {
            return try runtime.authenticator.authenticate(authorization: authorization)
        } catch {
            // A credential of another tenant is a known caller in the wrong place: forbidden, not unknown.
            if directory.isKnownElsewhere(authorization, than: runtime.provider.id) {
                throw TokenGateError(.forbidden, "the credential belongs to another provider")
            }
            throw error
        }
    }

    /// One backend call and the OpenSSL verification every token passes before it may be cached or handed out.
    private func fetchVerified(_ context: TokenContext, from runtime: ProviderRuntime) async throws -> DeliveredToken {
        let backend = runtime.provider.backend
        let settings = runtime.provider.settings
        let issued = try await backend.issue(TokenRequest(provider: settings.id, context: context))
        let now = clock.wallSeconds()
        var verifier = FleetEngineVerifier(
            keys: try await backend.verificationKeys(),
            audience: settings.audience,
            leeway: settings.leeway,
            minRemaining: settings.cache.minRemaining.components.seconds
        )
        var outcome = Result { () throws(TokenRejection) in try verifier.verify(issued.compact, for: context, now: now) }
        // Keys may have rotated: on an unknown kid the backend may refetch them once (it rate-limits that itself).
        if case .failure(let rejection) = outcome, rejection.reason.rawValue == "unknown_kid",
            let keyID = JWTVerifier.decodeUnverified(issued.compact).header?["kid"]?.stringValue,
            let refreshed = try await backend.verificationKeys(refreshingFor: keyID)
        {
            verifier.keys = refreshed
            outcome = Result { () throws(TokenRejection) in try verifier.verify(issued.compact, for: context, now: now) }
        }
        switch outcome {
        case .success(let verified):
            return DeliveredToken(
                compact: issued.compact,
                issuedAt: verified.issuedAt ?? now,
                expiresAt: verified.expiresAt ?? issued.expiresAt
            )
        case .failure(let rejection):
            throw TokenGateError(
                .backendInvalidToken,
                "the backend's token failed verification (\(rejection.reason)): \(rejection.message)"
            )
        }
    }

    /// Waits until every refresh-ahead started so far has finished (tests, and a clean shutdown).
    public func waitForBackgroundRefreshes() async {
        for runtime in runtimes.values { await runtime.cache.waitForRefreshes() }
    }

    /// The public keys of a provider's signers as a JWKS document.
    public func publicKeys(providerID: String) async throws(TokenGateError) -> [UInt8] {
        guard let id = ProviderID(providerID), let runtime = runtimes[id] else {
            throw TokenGateError(.unknownProvider, "no provider with that ID")
        }
        do {
            return try await runtime.provider.backend.verificationKeys().keySet.publicJSON()
        } catch let error as TokenGateError {
            throw error
        } catch {
            throw TokenGateError(.backendError, "the provider's keys are unavailable: \(error)")
        }
    }
}
