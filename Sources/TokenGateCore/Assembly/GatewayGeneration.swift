package import ServiceLifecycle

/// Everything the gateway serves with, assembled in one place by ``GatewayAssembler`` and swapped whole by a
/// reload: the configuration it came from, one runtime per provider, the shared key sets, and the background work.
///
/// Immutable; a request reads the current generation once and keeps the provider runtime it resolved, so it never
/// sees a mix of two configurations.
package final class GatewayGeneration: Sendable {
    /// 1 for the generation `serve` started with, then one more per successful reload.
    package let number: Int
    /// The SHA-256 of the configuration file's bytes, lower-case hex.
    package let configurationDigest: String
    /// The validated configuration.
    package let configuration: GatewayConfiguration
    /// The providers, by ID.
    package let providers: [ProviderID: ProviderRuntime]
    /// Every JWKS URL in use, each with its one key set.
    package let keySets: KeySetDirectory
    /// Which providers' api-key clients hold each key digest: the "credential of another tenant" answer (403, not
    /// 401) is one lookup here, never an authentication on another tenant's behalf. Revoked clients are left out.
    let apiKeyOwners: [[UInt8]: [ProviderID]]
    /// What assembling it found suspicious but not wrong, located; logged by `serve` and the reloader.
    package let warnings: [ConfigError]
    /// The instruments it counts with (the assembler's, the same for every generation of one gateway).
    package let metrics: GatewayMetrics
    /// Tenants whose file did not parse or build on the reload that made this generation: each serves the
    /// configuration it had before, and the error says why (file, line, column). Shown in `/readyz` as
    /// `stale_config`.
    package let staleTenants: [ProviderID: ConfigError]
    /// Every tenant file that did not parse or build, by path: the stale tenants' and those of new tenants
    /// (which are not served).
    package let brokenTenantFiles: [String: ConfigError]

    init(
        number: Int,
        configurationDigest: String,
        configuration: GatewayConfiguration,
        providers: [ProviderID: ProviderRuntime],
        keySets: KeySetDirectory,
        apiKeyOwners: [[UInt8]: [ProviderID]],
        metrics: GatewayMetrics,
        warnings: [ConfigError] = [],
        staleTenants: [ProviderID: ConfigError] = [:],
        brokenTenantFiles: [String: ConfigError] = [:]
    ) {
        self.staleTenants = staleTenants
        self.brokenTenantFiles = brokenTenantFiles
        self.metrics = metrics
        self.number = number
        self.configurationDigest = configurationDigest
        self.configuration = configuration
        self.providers = providers
        self.keySets = keySets
        self.apiKeyOwners = apiKeyOwners
        self.warnings = warnings
    }

    /// What runs beside the server while this generation serves: one refresher per key set, and each backend's own
    /// work (a file source's watcher). Each ends when cancelled, so a reload can stop them all.
    package var services: [any Service] {
        let backends = providers.keys.sorted().compactMap { providers[$0]?.backend.backgroundWork }
        return keySets.refreshers + backends
    }

    /// The readiness of `runtime`, one of this generation's providers: its own, and `degraded` while it serves a
    /// configuration its tenant file no longer parses to.
    package func readiness(of runtime: ProviderRuntime) -> ProviderReadiness {
        let own = runtime.readiness
        guard let error = staleTenants[runtime.id] else { return own }
        let reasons = own.reasons + ["stale_config: serving the last good configuration; \(error)"]
        return ProviderReadiness(state: own.state == .ready ? .degraded : own.state, reasons: reasons)
    }

    /// Every verification key that came from a certificate, with when the certificate expires.
    package var certificateExpiries: [(provider: ProviderID, serviceAccount: String, expiresAt: Int64)] {
        providers.keys.sorted().flatMap { id in
            (providers[id]?.backend.verificationKeys ?? []).compactMap { source in
                source.certificateExpiresAt.map { (id, source.serviceAccount, $0) }
            }
        }
    }

    /// Sets the gauges that are read rather than counted (cached tokens, signing key health); call before exporting.
    package func updateGauges() {
        for runtime in providers.values {
            runtime.metrics.recordCacheEntries(runtime.cache.count)
            runtime.keyHealth.updateGauges()
        }
    }
}
