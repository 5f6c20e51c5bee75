/// `server.readiness`: what makes the whole process unready, beyond "no provider can serve".
///
/// ```yaml
/// server:
///   readiness:
///     requireProviders: [acme-rides]   # default none: no tenant gates the others
///     startTimeout: 30s                # 0s...10m, default 30s
/// ```
package struct ReadinessSettings: Sendable, Equatable {
    /// Providers whose readiness the process's readiness follows (a single-tenant deployment, or a tenant the
    /// operator would rather see the replica leave the load balancer for). Empty by default: one tenant's bad day
    /// never takes the others out of service.
    package var requireProviders: [ProviderID] = []
    /// How long after the process starts it waits for providers still *starting* (a first key-set fetch, a first
    /// access token in flight) before it takes traffic without them. A provider whose first answer failed is not
    /// waited for.
    package var startTimeout: Duration = .seconds(30)

    /// The defaults.
    package init() {}

    static func parse(_ node: ConfigNode) throws -> ReadinessSettings {
        let mapping = try node.mapping(allowedKeys: ["requireProviders", "startTimeout"])
        var settings = ReadinessSettings()
        if let list = mapping.optional("requireProviders") {
            for entry in try list.sequence() {
                let text = try entry.string()
                guard let id = ProviderID(text) else { throw entry.error("'\(text)' is not a provider ID (a Google Cloud project ID)") }
                guard !settings.requireProviders.contains(id) else { throw entry.error("\(id) is listed twice") }
                settings.requireProviders.append(id)
            }
        }
        if let value = mapping.optional("startTimeout") {
            settings.startTimeout = try value.duration()
            guard settings.startTimeout >= .zero, settings.startTimeout <= .seconds(600) else {
                throw value.error("must be between 0s and 10m")
            }
        }
        return settings
    }
}
