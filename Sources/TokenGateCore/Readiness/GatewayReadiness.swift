/// Whether this process can serve: what `/readyz` answers, on both listeners.
///
/// The process is ready once its configuration is loaded and its listeners are up (the route answers at all) and
/// it can serve the tenants that are healthy. One tenant that is not ready, degraded or stale never makes it
/// unready by itself: a shared gateway taken out of its load balancer for one tenant's revoked grant would be down
/// for every tenant. What does make it unready:
/// - **no provider can serve** (every one is not ready or starting): a replica that can answer nothing but 503;
/// - **a required provider cannot serve** (`server.readiness.requireProviders`, for a deployment an operator wants
///   gated on a tenant);
/// - **still starting**: within `server.readiness.startTimeout` of the start, a provider is still waiting for its
///   first answers (key sets, an access token), so a new replica does not take traffic it would refuse a second later.
///
/// Each provider's own state stays visible on the admin listener, its gauge and its route (``ReadinessTracker``).
package struct GatewayReadiness: Sendable {
    /// One provider's state as the process sees it.
    package struct Provider: Sendable {
        /// The provider.
        package let id: ProviderID
        /// Its state and reasons.
        package let readiness: ProviderReadiness
        /// When this process first saw it in this state, epoch seconds.
        package let since: Int64
        /// Whether `server.readiness.requireProviders` names it.
        package let isRequired: Bool

        /// ``since`` in RFC 3339 (UTC), as the admin listener shows it.
        package var sinceText: String { RFC3339.format(since) }
    }

    /// Whether the process takes traffic.
    package let isReady: Bool
    /// Why it does not, one sentence each (empty when ready).
    package let reasons: [String]
    /// Every provider of the generation being served, by ID.
    package let providers: [Provider]

    /// The process's verdict on `providers`: `isStarting` while the start timeout has not run out.
    package init(providers: [Provider], settings: ReadinessSettings, isStarting: Bool) {
        self.providers = providers
        var reasons: [String] = []
        let byID = Dictionary(uniqueKeysWithValues: providers.map { ($0.id, $0.readiness) })
        for id in settings.requireProviders {
            guard let readiness = byID[id] else {
                reasons.append("required provider \(id) is not served (its configuration did not load)")
                continue
            }
            if !readiness.isReady { reasons.append("required provider \(id) is \(readiness.state.rawValue)") }
        }
        if !providers.contains(where: \.readiness.isReady) {
            reasons.append(providers.isEmpty ? "no provider is served" : "no provider can serve")
        }
        let starting = providers.filter { $0.readiness.state == .starting }.map(\.id.rawValue)
        if isStarting, !starting.isEmpty {
            reasons.append("starting: waiting for the first answers of \(starting.joined(separator: ", "))")
        }
        self.reasons = reasons
        self.isReady = reasons.isEmpty
    }
}
