import NIOPosix
import StaticKeySigner
import Synchronization
package import TokenGateCore

/// Counts the gateway's backend calls around the real static-key signer, and can make that backend misbehave:
/// fail outright (the gateway answers 503) or sign tokens for another trip (the gateway must refuse them, 502).
package final class BackendProbe: Sendable {
    private let state = Mutex<(calls: Int, failuresLeft: Int, wrongTrip: Bool, callsPerContext: [TokenContext: Int])>((0, 0, false, [:]))
    private let timing = Mutex<(delay: Duration, held: Bool)>((.zero, false))
    private let signedOnEventLoop = Mutex<[Bool]>([])

    /// Creates a probe that lets every call through.
    package init() {}

    /// Backend calls so far, failed and misbehaving ones included.
    package var calls: Int { state.withLock { $0.calls } }

    /// Backend calls so far for `context`.
    package func calls(for context: TokenContext) -> Int { state.withLock { $0.callsPerContext[context, default: 0] } }

    /// The next `count` calls fail as `backend_unavailable`.
    package func failNext(_ count: Int) { state.withLock { $0.failuresLeft = count } }

    /// Every call fails until `failNext(0)`.
    package func failAlways() { failNext(.max) }

    /// While on, consumer tokens are signed for another trip than the one asked for.
    package func misbehave(_ on: Bool) { state.withLock { $0.wrongTrip = on } }

    /// Every call takes `delay` before it signs, so concurrent requests overlap a mint.
    package func delayCalls(by delay: Duration) { timing.withLock { $0.delay = delay } }

    /// Calls hang (after they are counted) until ``releaseCalls()``: a backend stuck mid-mint.
    package func holdCalls() { timing.withLock { $0.held = true } }

    /// Lets held calls, and later ones, through.
    package func releaseCalls() { timing.withLock { $0.held = false } }

    /// For each call that went on to sign, in order: whether it signed on an event loop's thread.
    package var signedOnEventLoops: [Bool] { signedOnEventLoop.withLock { $0 } }

    fileprivate func recordSigning() {
        let onEventLoop = MultiThreadedEventLoopGroup.currentEventLoop != nil
        signedOnEventLoop.withLock { $0.append(onEventLoop) }
    }

    /// Waits out the delay and any hold.
    fileprivate func pace() async {
        let delay = timing.withLock { $0.delay }
        if delay > .zero { try? await Task.sleep(for: delay) }
        while timing.withLock({ $0.held }) { try? await Task.sleep(for: .milliseconds(10)) }
    }

    /// Records a call; says whether it must fail and whether it must sign for the wrong trip.
    fileprivate func record(_ context: TokenContext) -> (fail: Bool, wrongTrip: Bool) {
        state.withLock { state in
            state.calls += 1
            state.callsPerContext[context, default: 0] += 1
            guard state.failuresLeft > 0 else { return (false, state.wrongTrip) }
            if state.failuresLeft != .max { state.failuresLeft -= 1 }
            return (true, state.wrongTrip)
        }
    }
}

/// The static-key factory, its backends wrapped in a ``BackendProbe``.
package struct ProbedFactory: TokenBackendFactory {
    let probe: BackendProbe
    package var type: String { "static-key" }

    /// Wraps every backend this factory builds in `probe`.
    package init(probe: BackendProbe) { self.probe = probe }

    package func makeBackend(_ context: BackendContext) async throws -> any TokenBackend {
        ProbedBackend(inner: try await StaticKeySignerFactory().makeBackend(context), probe: probe)
    }
}

/// The real signer behind a probe.
struct ProbedBackend: TokenBackend {
    let inner: any TokenBackend
    let probe: BackendProbe
    var tokenTypes: Set<TokenType> { inner.tokenTypes }

    func issue(_ request: TokenRequest) async throws -> IssuedToken {
        let (fail, wrongTrip) = probe.record(request.context)
        await probe.pace()
        if fail { throw TokenGateError(.backendUnavailable, "probe: the signer is down") }
        probe.recordSigning()
        var request = request
        if wrongTrip, case .trip = request.context { request.context = .trip(ContextID("someone-elses-trip")!) }
        return try await inner.issue(request)
    }

    var verificationKeys: [BoundKeySource] { inner.verificationKeys }
}
