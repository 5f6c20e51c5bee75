/// Whether a provider can serve, and why not: what the admin `/readyz` reports per provider.
///
/// A provider is *ready* when every key it needs has arrived at least once: each JWKS URL its backend's tokens
/// are verified with, and each session-token JWKS URL of a client marked `requiredForReadiness` (the default). A
/// static-key or file backend is ready as soon as it is built (its keys and tokens were loaded then). A provider
/// whose keys arrived but whose last refresh failed stays ready, serving from the last good set, and is reported
/// *degraded* with the reason. A backend adds its own reasons (`TokenBackend.readiness`): an IAM signer is not
/// ready until it has an access token, nor while IAM refuses it a permission. A signing key Google no longer lists,
/// or near its `expires:` date, makes the provider degraded (`SigningKeyHealth`). While something it needs has
/// been asked for and neither arrived nor failed (a first key-set fetch, a first access token), it is *starting*.
///
/// One provider's state never decides the process's readiness by itself (``GatewayReadiness``).
package struct ProviderReadiness: Sendable, Equatable {
    /// Ready, ready on a last good set, waiting for a first answer, or not ready.
    package enum State: String, Sendable, CaseIterable {
        case ready
        case degraded
        case starting
        case notReady = "not_ready"
    }

    /// The state.
    package let state: State
    /// Why it is not simply ready, one sentence each; never key material.
    package let reasons: [String]

    /// Whether the provider can serve (degraded can).
    package var isReady: Bool { state == .ready || state == .degraded }

    /// This readiness with Fleet Engine's `refusals` of the provider's tokens: a ready provider serving tokens
    /// Fleet Engine refuses is degraded; the others keep their state. Never not ready: the gateway can still serve.
    func adding(refusals: [String]) -> ProviderReadiness {
        guard !refusals.isEmpty else { return self }
        return ProviderReadiness(state: state == .ready ? .degraded : state, reasons: reasons + refusals)
    }
}

extension ProviderRuntime {
    /// The provider's readiness now.
    package var readiness: ProviderReadiness {
        var missing: [String] = []
        var pending: [String] = []
        var stale: [String] = []
        func inspect(_ set: RemoteKeySet, _ what: String) {
            if set.current() == nil {
                if let failure = set.lastFailure {
                    missing.append("\(what) \(set.url.url) not fetched yet: \(failure)")
                } else {
                    pending.append("\(what) \(set.url.url) not fetched yet")
                }
            } else if let failure = set.lastFailure {
                stale.append("\(what) \(set.url.url) serving its last good keys: \(failure)")
            }
        }
        for set in keys.remoteSets { inspect(set, "backend keys from") }
        for set in authenticator.keySetsRequiredForReadiness { inspect(set, "session-token keys from") }
        let backendReadiness = backend.readiness
        missing += backendReadiness.notReady
        pending += backendReadiness.starting
        stale += backendReadiness.degraded
        stale += keyHealth.problems
        let guards = backendGuards.all.map { ("backend calls for \($0.type) tokens", $0.callGuard) } + [("authorizer calls", authorizer.callGuard)]
        for (calls, callGuard) in guards {
            let circuit = callGuard.circuit
            guard circuit.state != .closed else { continue }
            stale.append("circuit_open: \(calls) refused (\(circuit.state.rawValue)) after \(circuit.reason ?? "failures")")
        }
        if !missing.isEmpty { return ProviderReadiness(state: .notReady, reasons: missing + pending + stale) }
        if !pending.isEmpty { return ProviderReadiness(state: .starting, reasons: pending + stale) }
        if !stale.isEmpty { return ProviderReadiness(state: .degraded, reasons: stale) }
        return ProviderReadiness(state: .ready, reasons: [])
    }
}

extension ProviderRuntime {
    /// `check-config --online`: fetches Google's lists of the signing keys' accounts and reports each key.
    package func checkKeysOnline() async -> [OnlineFinding] { await keyHealth.checkOnline() }
}
