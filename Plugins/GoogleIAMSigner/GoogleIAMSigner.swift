import GoogleAuth
import JOSE
import Logging
package import ServiceLifecycle
package import TokenGateCore

/// A backend that signs Fleet Engine tokens without holding any key: Google's IAM signs them as the configured
/// service account (`signJwt`), authorised by the gateway's own identity from Application Default Credentials
/// (GKE Workload Identity, Cloud Run's service account, a workload-identity-federation file, …).
///
/// The claims are exactly the `static-key` backend's. IAM names the Google-managed key it used in the token's
/// `kid`; the gateway verifies every token against the keys each account publishes (`publicKeys`, fetched and
/// refreshed by the shared key-set directory, refetched on an unknown `kid`) before it is cached or served.
package struct GoogleIAMSigner: TokenBackend {
    let settings: GoogleIAMSettings
    let iam: IAMCredentialsClient
    let slots: SigningSlots
    let health: SignerHealth
    let audience: String
    let clock: TokenGateClock
    let metrics: BackendMetrics
    let logger: Logger

    package let tokenTypes: Set<TokenType>
    package let verificationKeys: [BoundKeySource]

    init(
        settings: GoogleIAMSettings, iam: IAMCredentialsClient, health: SignerHealth, audience: String, clock: TokenGateClock,
        metrics: BackendMetrics, logger: Logger
    ) {
        self.settings = settings
        self.iam = iam
        self.slots = SigningSlots(limit: settings.maxConcurrentSigns)
        self.health = health
        self.audience = audience
        self.clock = clock
        self.metrics = metrics
        self.logger = logger
        self.tokenTypes = Set(settings.serviceAccounts.keys)
        self.verificationKeys = settings.accounts.map { account in
            BoundKeySource(.url(JWKSURL(checked: settings.publicKeysURL(of: account))), serviceAccount: account)
        }
    }

    package var summary: String {
        let signing = settings.serviceAccounts.sorted { $0.key < $1.key }.map { "\($0.key.rawValue) as \($0.value)" }
        return
            "IAM signJwt at \(settings.iamCredentials) with \(iam.credentials.summary); lifetime "
            + "\(settings.lifetimes.describe(for: Set(settings.serviceAccounts.keys))); "
            + signing.joined(separator: ", ")
    }

    package var readiness: BackendReadiness { health.readiness }

    package var backgroundWork: (any Service)? { IAMSignerWarmUp(signer: self) }

    /// The credentials, then once per account: may the gateway's identity sign as it? (one probe `signJwt`, as the
    /// warm-up makes).
    package func checkOnline() async -> [OnlineFinding] {
        var findings: [OnlineFinding] = []
        do {
            let token = try await iam.credentials.accessToken()
            // What the credentials obtained on the way (a federated identity's credentials and subject token), then
            // the access token itself.
            let steps = token.provenance.map { "\($0); " } ?? ""
            findings.append(
                OnlineFinding(
                    subject: "credentials", isOK: true, message: "\(iam.credentials.summary): \(steps)access token until \(token.expiresAt)"))
        } catch {
            return [OnlineFinding(subject: "credentials", isOK: false, message: "\(iam.credentials.summary): \(error)")]
        }
        for account in settings.accounts {
            let types = settings.serviceAccounts.filter { $0.value == account }.keys.map(\.rawValue).sorted().joined(separator: ", ")
            do {
                _ = try await IAMSignerWarmUp.probe(account, with: self)
                findings.append(OnlineFinding(subject: account, isOK: true, message: "may sign (\(types))"))
            } catch {
                findings.append(OnlineFinding(subject: account, isOK: false, message: "\(error.reason) (\(types))"))
            }
        }
        return findings
    }

    package var tokenLifetimes: TokenLifetimes? { settings.lifetimes }

    package func issue(_ request: TokenRequest) async throws -> IssuedToken {
        let context = request.context
        guard let account = settings.serviceAccounts[context.tokenType] else {
            throw TokenGateError(.unknownTokenType, "no service account is configured for \(context.tokenType) tokens")
        }
        let now = clock.wallSeconds()
        let lifetime = request.lifetime(issuedAt: now, configured: settings.lifetimes.seconds(for: context.tokenType))
        let claims = FleetEngineClaims.claims(
            serviceAccount: account, audience: audience, context: context, issuedAt: now, lifetime: lifetime)
        let compact = try await sign(claims, as: account)
        return IssuedToken(compact: compact, keyID: nil, expiresAt: now + lifetime, issuer: account)
    }

    /// One `signJwt` within the provider's concurrency cap and deadline; failures become the gateway's codes.
    func sign(_ claims: JSONObject, as account: String) async throws(TokenGateError) -> String {
        let started = ContinuousClock.now
        let deadline = started + settings.timeout
        guard await slots.acquire(before: deadline) else {
            metrics.recordSigningCall(outcome: "timeout", duration: ContinuousClock.now - started)
            throw TokenGateError(.backendTimeout, "no IAM call slot came free in time (maxConcurrentSigns \(settings.maxConcurrentSigns))")
        }
        defer { slots.release() }
        do {
            let jwt = try await iam.signJWT(claims, as: account, deadline: deadline)
            metrics.recordSigningCall(outcome: "ok", duration: ContinuousClock.now - started)
            health.signed(as: account)
            return jwt
        } catch {
            let duration = ContinuousClock.now - started
            switch error {
            case .forbidden(let account, let message):
                metrics.recordSigningCall(outcome: "forbidden", duration: duration)
                if !health.isForbidden(account) {
                    logger.error(
                        "IAM refuses to sign", metadata: ["reason": "\(SignerHealth.missingPermission(account: account, message: message))"])
                }
                health.forbidden(account, message: message)
                throw TokenGateError(.backendUnavailable, SignerHealth.missingPermission(account: account, message: message))
            case .unavailable(let reason, let retryAfter):
                metrics.recordSigningCall(outcome: "unavailable", duration: duration)
                health.unanswered(account, reason: reason)
                throw TokenGateError(.backendUnavailable, reason, retryAfterSeconds: retryAfter)
            case .timeout:
                metrics.recordSigningCall(outcome: "timeout", duration: duration)
                throw TokenGateError(.backendTimeout, "IAM did not sign within \(settings.timeout)")
            case .invalidAnswer(let reason):
                metrics.recordSigningCall(outcome: "invalid", duration: duration)
                throw TokenGateError(.backendError, reason)
            }
        }
    }
}
