public import JOSE
public import Logging
public import ServiceLifecycle

/// What an authenticated caller asked for, after provider policy ran. A struct, so fields can be added.
public struct TokenRequest: Sendable, Hashable {
    /// The provider (tenant) the token is for.
    public var provider: ProviderID
    /// The trip, vehicle, task or shipment; it also decides the token type.
    public var context: TokenContext
    /// The latest `exp` the token may carry (epoch seconds), when the tenant's authorizer bounded it (the trip
    /// ends then). A backend that mints honours it with ``lifetime(issuedAt:configured:)``; the gateway refuses
    /// any token that outlives it, whichever backend made it.
    public var notAfter: Int64?

    /// The token type, which the context decides.
    public var type: TokenType { context.tokenType }

    /// Creates a request.
    public init(provider: ProviderID, context: TokenContext, notAfter: Int64? = nil) {
        self.provider = provider
        self.context = context
        self.notAfter = notAfter
    }

    /// The lifetime of a token minted at `issuedAt`: the `configured` one, cut so that `exp` is at most
    /// ``notAfter``; never below one second (the gateway refuses a bound that close before asking).
    public func lifetime(issuedAt: Int64, configured: Int64) -> Int64 {
        FleetEngineClaims.lifetime(configured, issuedAt: issuedAt, notAfter: notAfter)
    }
}

/// A token as a backend produced it, before the gateway verified it.
public struct IssuedToken: Sendable, Equatable {
    /// The compact JWS. Never logged.
    public var compact: String
    /// The `kid` the backend says it used, if it knows.
    public var keyID: String?
    /// When the backend says it expires, epoch seconds, if it says. The verified `exp` claim is authoritative; a
    /// statement that disagrees with it beyond the leeway is logged.
    public var expiresAt: Int64?
    /// The service accounts that may have issued it, when the backend knows (it signed as that account, or its
    /// configuration binds the token type to accounts): any other `iss` is refused (`wrong_issuer`) even with a key
    /// bound to it, so a consumer's token is never one a more privileged account (the driver's) signed. Empty: any
    /// account the provider's keys are bound to.
    public var issuers: Set<String>

    /// The one service account that issued it, when ``issuers`` names exactly one.
    public var issuer: String? { issuers.count == 1 ? issuers.first : nil }

    /// Creates an issued token; `issuer` and `issuers` together are the accounts that may have signed it.
    public init(compact: String, keyID: String?, expiresAt: Int64?, issuer: String? = nil, issuers: Set<String> = []) {
        self.compact = compact
        self.keyID = keyID
        self.expiresAt = expiresAt
        self.issuers = issuers.union(issuer.map { [$0] } ?? [])
    }
}

/// The keys that may sign a provider's tokens, and which service account each key belongs to.
public struct VerificationKeys: Sendable {
    /// Public keys by `kid`.
    public var keySet: JWKSet
    /// The service-account email bound to each `kid`: a token's `iss` must be it. A key with no entry here verifies
    /// no token (`FleetEngineVerifier` fails closed).
    public var issuers: [String: String]

    /// Creates a set of verification keys; `issuers` binds each `kid` to the one service account it signs for.
    public init(keySet: JWKSet, issuers: [String: String]) {
        self.keySet = keySet
        self.issuers = issuers
    }
}

/// A key a backend signs with now, as the gateway's key-health watch sees it: Google must still list its `kid`
/// among the account's keys, and its `expires` date must not be near.
public struct SigningKey: Sendable, Hashable {
    /// The key's `kid` (a service-account key's `private_key_id`).
    public var keyID: String
    /// The service account the key belongs to.
    public var serviceAccount: String
    /// When Google stops accepting it (the configured `expires:`), epoch seconds; nil when not stated.
    public var expiresAt: Int64?

    /// Creates a signing key's description.
    public init(keyID: String, serviceAccount: String, expiresAt: Int64? = nil) {
        self.keyID = keyID
        self.serviceAccount = serviceAccount
        self.expiresAt = expiresAt
    }
}

/// One provider's token source. Immutable and `Sendable`: it is called concurrently.
///
/// A backend issues tokens and says where the keys that verify them are; it does not verify them. The gateway
/// verifies every token it issues (signature, key, issuer, audience, lifetime, exact claims) before the token is
/// cached or handed out, with those keys: a key set from a URL is fetched and refreshed by the gateway's one
/// shared key set for that URL.
///
/// ```swift
/// let token = try await backend.issue(TokenRequest(provider: id, context: .trip(tripID)))
/// ```
public protocol TokenBackend: Sendable {
    /// The token types this backend can issue; others are `unknown_token_type`. Read on every request: keep it
    /// stored, not computed.
    var tokenTypes: Set<TokenType> { get }
    /// Issues (or fetches) a token for `request`. Throws `TokenGateError` with a `backend_*` code on failure.
    func issue(_ request: TokenRequest) async throws -> IssuedToken
    /// Where the keys that verify this backend's tokens come from, each bound to its service account.
    var verificationKeys: [BoundKeySource] { get }
    /// Work to run beside the server while this backend serves (watching a file), or nil. It must end when its
    /// task is cancelled: a reload cancels the work of the generation it replaces and starts it again.
    var backgroundWork: (any Service)? { get }
    /// One line for `check-config` about what the backend does (the upstream URL, the token file); never a secret.
    var summary: String { get }
    /// What keeps the backend from serving now, for `/readyz` (beside its verification keys, which the gateway
    /// watches itself). Read when readiness is asked for: keep it cheap.
    var readiness: BackendReadiness { get }
    /// Asks the services the backend depends on whether it can work (`tokengate check-config --online`): one
    /// finding per thing checked. Nothing for a backend that needs no service.
    func checkOnline() async -> [OnlineFinding]
    /// How long the tokens it mints live, per type, for a backend that mints them (nil for one that fetches
    /// tokens whose lifetime another server chose): checked at load against the provider's cache policy.
    var tokenLifetimes: TokenLifetimes? { get }
    /// The keys it signs with now (one per key, whatever the token types), for the gateway's key-health watch;
    /// empty for a backend that holds no key.
    var signingKeys: [SigningKey] { get }
}

/// One thing `check-config --online` checked: what, whether it works, and if not what to do.
public struct OnlineFinding: Sendable, Equatable {
    /// What was checked (`credentials`, a service account).
    public var subject: String
    /// Whether it works.
    public var isOK: Bool
    /// What was found, or what is missing and how to fix it.
    public var message: String

    /// Creates a finding.
    public init(subject: String, isOK: Bool, message: String) {
        self.subject = subject
        self.isOK = isOK
        self.message = message
    }
}

/// A backend's own part of its provider's readiness: why it cannot serve yet, or serves on something stale. One
/// sentence each, naming what to fix; never a secret.
public struct BackendReadiness: Sendable, Equatable {
    /// Why no token can be issued now (no credentials yet, a permission missing).
    public var notReady: [String]
    /// Why it serves, but not as configured.
    public var degraded: [String]
    /// What it is still waiting for a first answer about (an access token asked for, a permission not yet known),
    /// with no failure seen yet: a start the gateway waits for, up to `server.readiness.startTimeout`, before it
    /// takes traffic. A failure moves the reason to ``notReady``.
    public var starting: [String]

    /// Ready.
    public static let ready = BackendReadiness(notReady: [], degraded: [])

    /// Creates a readiness report.
    public init(notReady: [String], degraded: [String] = [], starting: [String] = []) {
        self.notReady = notReady
        self.degraded = degraded
        self.starting = starting
    }
}

extension TokenBackend {
    /// A backend that loads everything when it is built is ready once built.
    public var readiness: BackendReadiness { .ready }
    /// Nothing to ask.
    public func checkOnline() async -> [OnlineFinding] { [] }
    /// Most backends have no background work.
    public var backgroundWork: (any Service)? { nil }
    /// Nothing to add by default.
    public var summary: String { "" }
    /// Tokens whose lifetime the backend does not choose.
    public var tokenLifetimes: TokenLifetimes? { nil }
    /// No key held.
    public var signingKeys: [SigningKey] { [] }
}

/// What a factory gets to build one provider's backend.
public struct BackendContext: Sendable {
    /// The provider the backend serves.
    public var provider: ProviderID
    /// The provider's `backend:` section; the factory validates every key of it (including `type`).
    public var section: ConfigNode
    /// The `aud` claim the provider's tokens carry.
    public var audience: String
    /// The clock skew the provider's tokens are verified with, seconds.
    public var leeway: Int64
    /// Wall and monotonic time, injectable for tests.
    public var clock: TokenGateClock
    /// Where the backend logs; never a token or a secret.
    public var logger: Logger
    /// What the backend counts (upstream retries).
    public var metrics: BackendMetrics

    /// Creates a context.
    public init(
        provider: ProviderID, section: ConfigNode, audience: String, leeway: Int64 = 60, clock: TokenGateClock, logger: Logger,
        metrics: BackendMetrics = .none
    ) {
        self.metrics = metrics
        self.provider = provider
        self.section = section
        self.audience = audience
        self.leeway = leeway
        self.clock = clock
        self.logger = logger
    }
}

/// Builds backends of one `type:` from configuration. One per plugin target, listed in a `BackendRegistry`.
/// Every configuration error surfaces here, at load time, as a `ConfigError` naming file, line and key. Called by
/// the `GatewayAssembler` only; a backend's background work starts when its generation runs, not here.
public protocol TokenBackendFactory: Sendable {
    /// The `backend.type` value in `config.yaml`, e.g. `static-key`.
    var type: String { get }
    /// Validates `context.section` and builds the backend.
    func makeBackend(_ context: BackendContext) async throws -> any TokenBackend
}
