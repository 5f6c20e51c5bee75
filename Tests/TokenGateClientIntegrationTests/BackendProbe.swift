import StaticKeySigner
import Synchronization
import TokenGateCore

/// Counts the gateway's signing calls around the real static-key signer, and can make the backend fail.
final class BackendProbe: Sendable {
    private let state = Mutex<(calls: Int, failuresLeft: Int)>((0, 0))

    /// Signing calls the gateway made so far, failed ones included.
    var calls: Int { state.withLock { $0.calls } }

    /// The next `count` signing calls fail as `backend_unavailable` (the gateway answers 503).
    func failNext(_ count: Int) { state.withLock { $0.failuresLeft = count } }

    /// Every signing call fails until `failNext(0)`.
    func failAlways() { failNext(.max) }

    /// Records a call; returns whether it must fail.
    fileprivate func record() -> Bool {
        state.withLock { state in
            state.calls += 1
            guard state.failuresLeft > 0 else { return false }
            if state.failuresLeft != .max { state.failuresLeft -= 1 }
            return true
        }
    }
}

/// The static-key factory, its backends wrapped in a ``ProbedBackend``.
struct ProbedFactory: TokenBackendFactory {
    let probe: BackendProbe
    var type: String { "static-key" }

    func makeBackend(_ context: BackendContext) async throws -> any TokenBackend {
        ProbedBackend(inner: try await StaticKeySignerFactory().makeBackend(context), probe: probe)
    }
}

/// The real signer behind a probe that counts its calls and injects outages.
struct ProbedBackend: TokenBackend {
    let inner: any TokenBackend
    let probe: BackendProbe
    var tokenTypes: Set<TokenType> { inner.tokenTypes }

    func issue(_ request: TokenRequest) async throws -> IssuedToken {
        if probe.record() { throw TokenGateError(.backendUnavailable, "probe: the signer is down") }
        return try await inner.issue(request)
    }

    func verificationKeys() async throws -> VerificationKeys { try await inner.verificationKeys() }
}
