package import Logging

/// The whole gateway's configuration, as `config.yaml` declares it, validated.
package struct GatewayConfiguration: Sendable {
    /// Where the HTTP server listens.
    package var server: ServerSettings
    /// Every provider, by ID.
    package var providers: [ProviderID: ProviderSettings]
    /// Where issued tokens are recorded, or nil for nowhere.
    package var audit: AuditSettings?
    /// Admin API keys that may act for every provider (`adminKeys:` at the top level).
    package var adminKeys: [AdminKey]
    /// How ended contexts are refused.
    package var endedContexts: EndedContextSettings
    /// The store replicas share, or nil for a gateway on its own.
    package var sharedState: SharedStateSettings?
    /// Where spans are exported, or nil for no tracing (the default).
    package var tracing: TracingSettings?
    /// The tenant file each included provider came from (`providers: { include: … }`); inline ones are absent.
    package var providerFiles: [ProviderID: String] = [:]
    /// Every included tenant file as read, for the configuration's digest.
    package var includedFiles: [TenantFiles.File] = []

    /// Creates a configuration.
    package init(
        server: ServerSettings, providers: [ProviderID: ProviderSettings], audit: AuditSettings? = nil, adminKeys: [AdminKey] = [],
        endedContexts: EndedContextSettings = EndedContextSettings(), sharedState: SharedStateSettings? = nil,
        tracing: TracingSettings? = nil
    ) {
        self.sharedState = sharedState
        self.tracing = tracing
        self.server = server
        self.providers = providers
        self.audit = audit
        self.adminKeys = adminKeys
        self.endedContexts = endedContexts
    }
}

/// The `server:` section.
package struct ServerSettings: Sendable, Equatable {
    /// The address to bind; loopback unless the operator says otherwise.
    package var host: String = "127.0.0.1"
    /// The TCP port; 0 picks a free one.
    package var port: Int = 8080
    /// Open connections at most; one more is closed as it is accepted, counted and logged.
    package var maxConnections: Int = 10_000
    /// The listen queue of connections the kernel completed but the server has not accepted yet (`listen(2)`
    /// backlog). Linux silently caps it at `net.core.somaxconn`, so the default, the largest value, means "as long
    /// as the kernel allows" (as Go's servers do): an operator who raises `somaxconn` gets the longer queue.
    package var listenBacklog: Int = 65535
    /// Whether a token request a cached token answers is answered on the connection's event loop, by the token
    /// route's own checks called synchronously, instead of in a request task (on by default; off only to compare
    /// or to rule it out). Every other request takes the router either way.
    package var fastPath = true
    /// How many event loops (threads) serve the listeners, or nil for one per CPU this process may run on: its
    /// affinity mask (`taskset`, systemd's `CPUAffinity=`), its cgroup's cpuset and its CPU quota.
    package var eventLoops: Int?
    /// A connection with no request in progress for this long is closed.
    package var idleTimeout: Duration = .seconds(60)
    /// A request must arrive whole, headers and body, within this time of its first byte; else the connection is
    /// closed (a client sending slowly cannot hold a connection).
    package var readTimeout: Duration = .seconds(10)
    /// The admin listener (`/metrics`, `/healthz`, `/readyz`), or nil for none. Loopback by default: metrics
    /// name every tenant, so they are never on the public port.
    package var admin: AdminListener? = AdminListener()
    /// HTTPS on the public listener, or nil for plain HTTP (behind a TLS-terminating proxy).
    package var tls: TLSSettings?
    /// The proxies in front of the public listener whose word about the client's address is believed, or nil to
    /// take every connection's peer as the client.
    package var trustedProxies: TrustedProxies?
    /// Whether connections from trusted proxies open with a PROXY protocol header, and which version; nil for none.
    package var proxyProtocol: ProxyProtocolVersion?
    /// How log lines are written.
    package var logFormat: LogFormat = .text
    /// The least severe level logged.
    package var logLevel: Logger.Level = .info
    /// What makes the process unready beyond "no provider can serve" (`server.readiness`).
    package var readiness = ReadinessSettings()
    /// Each tenant's share of the log (`server.logBudget`), or nil for none.
    package var logBudget: RateLimit? = TenantLogBudget.defaultLimit

    /// Creates settings with the defaults.
    package init() {}
}

/// `server.admin`: where the operator's endpoints listen.
package struct AdminListener: Sendable, Equatable {
    /// The address to bind; loopback unless the operator says otherwise.
    package var host: String = "127.0.0.1"
    /// The TCP port; 0 picks a free one.
    package var port: Int = 9464
    /// Open connections at most, apart from the public listener's: a flood of idle connections to the admin port
    /// cannot take the descriptors the public one serves with. An operator's scraper and probes need a few.
    package var maxConnections: Int = 256

    /// A listener on `host` and `port` (by default 127.0.0.1:9464).
    package init(host: String = "127.0.0.1", port: Int = 9464, maxConnections: Int = 256) {
        self.host = host
        self.port = port
        self.maxConnections = maxConnections
    }
}

/// `server.logFormat`.
package enum LogFormat: String, Sendable, Equatable {
    /// `2026-11-22T15:04:05+0000 info tokengate: message key=value`, for people.
    case text
    /// One JSON object per line (`time`, `level`, `label`, `message` and the metadata), for log shippers.
    case json
}

/// One provider (tenant): its backend, token rules, cache, limits and callers.
package struct ProviderSettings: Sendable {
    /// The provider ID (Google Cloud project ID).
    package var id: ProviderID
    /// The `aud` of its tokens.
    package var audience: String
    /// Clock skew tolerated when verifying, seconds.
    package var leeway: Int64
    /// Cache behaviour.
    package var cache: TokenCachePolicy
    /// Rate limits.
    package var rateLimits: RateLimitSettings
    /// Callers that may ask for tokens.
    package var clients: [ClientConfig]
    /// A legacy response shape, or `nil` for TokenGate's own.
    package var response: ResponseMapping?
    /// Which browser origins may call the token route, or `nil` for none (no CORS headers at all).
    package var cors: CORSPolicy?
    /// Whether the provider also answers the routes of Google's sample token servers
    /// (`compatibility: google-samples`).
    package var answersGoogleSampleRoutes: Bool
    /// Admin API keys that may act for this provider only.
    package var adminKeys: [AdminKey]
    /// Fleet Engine's log entries pushed by Pub/Sub, which end trips, tasks and vehicles, or nil for none.
    package var events: FleetEventSettings?
    /// How its signing keys are watched (`keyHealth:`).
    package var keyHealth = KeyHealthSettings()
    /// Whether and how Fleet Engine's acceptance of its tokens is checked (`acceptanceCheck:`), or nil for never.
    package var acceptanceCheck: AcceptanceCheckSettings?
    /// The `acceptanceCheck:` section, for errors the assembly finds (a token type the backend does not issue).
    package var acceptanceCheckSection: ConfigNode?
    /// The backend plugin's `type:`.
    package var backendType: String
    /// The `backend:` section, handed to the plugin's factory (without the core's keys).
    package var backendSection: ConfigNode
    /// How calls to the backend and to the clients' authorizers are contained (the core's keys of `backend:`).
    package var backendGuard: BackendGuardSettings
    /// The `clients:` section, for telling on reload whether the clients changed.
    package var clientsSection: ConfigNode
}

/// Rate limits of one provider; `nil` means no limit at that level.
package struct RateLimitSettings: Sendable, Equatable, CustomStringConvertible {
    /// For all of the provider's requests together.
    package var provider: RateLimit?
    /// For each caller (client name).
    package var caller: RateLimit?
    /// For each token context (type and ID).
    package var context: RateLimit?
    /// Failed authentications at the provider, from everyone together; checked before any credential work.
    package var failedAuth: RateLimit? = Self.defaultFailedAuth
    /// Failed authentications from one peer address at the provider; checked before any credential work.
    package var failedAuthPerPeer: RateLimit? = Self.defaultFailedAuthPerPeer
    /// How many different contexts one caller may obtain tokens for per window, or nil.
    package var distinctContexts: DistinctContextLimits?

    /// 600 failed authentications a minute at one provider, 100 at once.
    package static let defaultFailedAuth = RateLimit(count: 600, per: .seconds(60), burst: 100)
    /// 60 failed authentications a minute from one address, 20 at once.
    package static let defaultFailedAuthPerPeer = RateLimit(count: 60, per: .seconds(60), burst: 20)

    /// Creates settings.
    package init(provider: RateLimit? = nil, caller: RateLimit? = nil, context: RateLimit? = nil) {
        self.provider = provider
        self.caller = caller
        self.context = context
    }

    package var description: String {
        [("provider", provider), ("caller", caller), ("context", context), ("failedAuth", failedAuth), ("failedAuthPerPeer", failedAuthPerPeer)]
            .map { "\($0.0)=\($0.1.map(String.init(describing:)) ?? "none")" }.joined(separator: " ")
            + " distinctContexts=\(distinctContexts.map(String.init(describing:)) ?? "none")"
    }
}
