import JOSE
import Logging

extension ProviderPipeline {
    /// One backend call and the OpenSSL verification every token passes before it may be cached or handed out; a
    /// token that passes is recorded in the audit log, naming the caller whose request started the fetch.
    /// With `notAfter`, the token expires no later (the backend is asked to, and a token past it is refused).
    func fetchVerified(for admission: TokenAdmission, notAfter: Int64? = nil) async throws -> DeliveredToken {
        let (settings, context, spans) = (runtime.settings, admission.context, services.spans)
        try checkMintBudget()
        let started = ContinuousClock.now
        let issued: IssuedToken
        do {
            issued = try await spans.run(.backend, provider: settings.id, tokenType: context.tokenType) { span in
                span.note(backend: settings.backendType)
                let request = TokenRequest(provider: settings.id, context: context, notAfter: notAfter)
                guard let callGuard = runtime.backendGuards.callGuard(for: context.tokenType) else {
                    throw TokenGateError(.unknownTokenType, "provider \(settings.id) does not issue \(context.tokenType) tokens")
                }
                return try await callGuard.run { try await runtime.backend.issue(request) }
            }
            runtime.metrics.recordBackendCall(context.tokenType, duration: ContinuousClock.now - started)
        } catch {
            runtime.metrics.recordBackendCall(context.tokenType, duration: ContinuousClock.now - started)
            runtime.metrics.recordBackendFailure(context.tokenType, (error as? TokenGateError)?.code ?? .backendError)
            throw error
        }
        return try await spans.run(.verify, provider: settings.id, tokenType: context.tokenType) { _ in
            try await verified(issued, for: admission, notAfter: notAfter)
        }
    }

    /// Takes one mint from the provider's budget (`backend.mintBudget`), or refuses `rate_limited`: one tenant's flood
    /// of new contexts is bounded in the backend calls (IAM's quota and connections), the signing CPU and the other
    /// tenants' share of both, while its cached tokens go on being served.
    private func checkMintBudget() throws(TokenGateError) {
        guard let budget = runtime.mintBudget, let seconds = budget.acquire(true).retryAfterSeconds else { return }
        runtime.metrics.recordRateLimited(.mintBudget)
        runtime.limiters.refusalLog.recordMintBudget(budget.limit)
        throw TokenGateError(.rateLimited, "provider \(runtime.id) is past its mint budget (backend.mintBudget)", retryAfterSeconds: seconds)
    }

    /// `issued` checked with OpenSSL against the keys bound to the provider (refetched once for an unknown `kid`),
    /// and recorded in the audit log.
    private func verified(_ issued: IssuedToken, for admission: TokenAdmission, notAfter: Int64?) async throws -> DeliveredToken {
        let (context, clock) = (admission.context, services.clock)
        let now = clock.wallSeconds()
        var verifier: FleetEngineVerifier
        do {
            verifier = try runtime.verifier()
        } catch {
            // No key yet (a JWKS URL not fetched so far): ask for it now (rate-limited) rather than wait a period.
            guard await runtime.keys.refreshForUnknownKey(now: clock.monotonicNanoseconds(), waiting: services.unknownKeyWait) else {
                throw error
            }
            verifier = try runtime.verifier()
        }
        var outcome = Result { () throws(TokenRejection) in try verifier.verify(issued.compact, for: context, now: now) }
        // Keys may have rotated: the shared key set refetches (rate-limited there) and the token is checked once more.
        if case .failure(let rejection) = outcome, rejection.reason == .unknownKid,
            await runtime.keys.refreshForUnknownKey(now: clock.monotonicNanoseconds(), waiting: services.unknownKeyWait)
        {
            verifier = try runtime.verifier()
            outcome = Result { () throws(TokenRejection) in try verifier.verify(issued.compact, for: context, now: now) }
        }
        if case .success(let verified) = outcome, !issued.issuers.isEmpty, !issued.issuers.contains(verified.claims["iss"]?.stringValue ?? "") {
            let accounts = issued.issuers.sorted().joined(separator: ", ")
            outcome = .failure(TokenRejection(.wrongIssuer, "iss is not \(accounts), the account that signs \(context.tokenType) tokens"))
        }
        // Only a backend that mints can cut a token short; one that fetches tokens gets no say past the bound.
        if case .success(let verified) = outcome, let notAfter, let expiresAt = verified.expiresAt, expiresAt > notAfter {
            outcome = .failure(TokenRejection(.outlivesBound, "exp \(expiresAt) is after the authorizer's until \(notAfter)"))
        }
        switch outcome {
        case .success(let verified):
            return delivered(issued, verified, for: admission, now: now, notAfter: notAfter)
        case .failure(let rejection):
            runtime.metrics.recordRejected(context.tokenType, rejection.reason)
            throw TokenGateError(.backendInvalidToken, "the backend's token failed verification (\(rejection.reason)): \(rejection.message)")
        }
    }

    /// The verified token as the cache keeps it, recorded in the audit log.
    private func delivered(
        _ issued: IssuedToken, _ verified: VerifiedJWT, for admission: TokenAdmission, now: Int64, notAfter: Int64?
    ) -> DeliveredToken {
        let (settings, context, logger) = (runtime.settings, admission.context, services.logger)
        let expiresAt = verified.expiresAt ?? now
        if let stated = issued.expiresAt, stated > expiresAt + settings.leeway || stated < expiresAt - settings.leeway {
            logger.warning(
                "the backend's stated expiry disagrees with the token's exp; using exp",
                metadata: ["provider": "\(settings.id)", "reason": "expiry_mismatch", "stated": "\(stated)", "exp": "\(expiresAt)"])
        }
        if verified.keyID == nil, runtime.metrics.recordKeylessToken(context.tokenType) {
            logger.notice(
                "the backend's tokens name no kid; each is verified against the keys bound to the service account its iss names",
                metadata: ["provider": "\(settings.id)", "kid": "\(verified.key.keyID ?? "none")"])
        }
        let token = DeliveredToken(
            compact: issued.compact, issuedAt: verified.issuedAt ?? now, expiresAt: expiresAt, sharingHeaderIn: runtime.tokenHeaders)
        services.audit.record(
            AuditRecord(
                time: now, provider: settings.id, context: context, caller: admission.caller,
                keyID: verified.keyID ?? verified.key.keyID, issuedAt: token.issuedAt, expiresAt: expiresAt,
                fingerprint: TokenFingerprint.of(issued.compact), requestID: admission.query.requestID, peer: admission.query.peer,
                notAfter: notAfter))
        return token
    }

    /// A token read from the shared store, checked exactly as a freshly minted one (Redis is not trusted), and
    /// usable only with more than the refresh window left. Not audited: the replica that minted it did that.
    /// With `notAfter`, a token expiring later is stale here: this caller mints one bounded, which replaces it.
    func adopt(_ compact: String, for context: TokenContext, notAfter: Int64? = nil) -> SharedState.Adoption {
        let now = services.clock.wallSeconds()
        guard let verifier = try? runtime.verifier() else { return .rejected(.unknownKid) }
        let verified: VerifiedJWT
        do {
            verified = try verifier.verify(compact, for: context, now: now)
        } catch {
            return .rejected(error.reason)
        }
        let expiresAt = verified.expiresAt ?? now
        guard expiresAt - now >= refreshBeforeSeconds, notAfter.map({ expiresAt <= $0 }) ?? true else { return .stale }
        return .usable(
            DeliveredToken(compact: compact, issuedAt: verified.issuedAt ?? now, expiresAt: expiresAt, sharingHeaderIn: runtime.tokenHeaders))
    }

    /// Seconds before expiry at which a cached token is refreshed (never less than the minimum it is served with).
    var refreshBeforeSeconds: Int64 {
        let policy = runtime.settings.cache
        return max(TokenGateClock.secondsRoundingUp(policy.minRemaining), TokenGateClock.secondsRoundingUp(policy.refreshBefore))
    }
}
