import Synchronization

/// Guards one kind of a provider's outbound calls (to its backend, for one token type, or to its clients'
/// authorizers): a sick callee must not hold the provider's requests, and everything they hold, for longer than it
/// must. A cap on calls in flight with a short queue, and a circuit breaker.
///
/// Every call is wrapped in ``run(_:failed:)``. Past `maxConcurrentCalls` a call waits in line at most
/// `queueTimeout`, then is refused `backend_unavailable` with `Retry-After`. The breaker counts each call's outcome:
/// after `consecutiveFailures` failures in a row, or a failure ratio over `window`, it opens, refuses every call at
/// once for `openFor` (and fails those in line), then lets one probe through: success closes it, failure opens it
/// again. Answers about the request itself (no token for that context, forbidden) are not failures.
///
/// One guard per provider, call kind and (for backend calls) token type (``BackendCallGuards``); a reload that keeps
/// the backend (or the clients) and the guard settings hands it on, so an open circuit stays open.
final class CallGuard: Sendable {
    /// What is being called (the `call` label).
    enum CallKind: String, Sendable {
        case backend, authorizer
    }

    /// The breaker's position (the gauge's value in parentheses).
    enum CircuitState: String, Sendable {
        case closed  // 0
        case halfOpen = "half_open"  // 1
        case open  // 2

        var gaugeValue: Int {
            switch self {
            case .closed: 0
            case .halfOpen: 1
            case .open: 2
            }
        }
    }

    let kind: CallKind
    let settings: BackendGuardSettings
    private let clock: TokenGateClock
    private let metrics: CallGuardMetrics
    private let state: Mutex<State>

    init(_ kind: CallKind, settings: BackendGuardSettings, clock: TokenGateClock, metrics: CallGuardMetrics) {
        self.kind = kind
        self.settings = settings
        self.clock = clock
        self.metrics = metrics
        self.state = Mutex(State(windowStart: clock.monotonicNanoseconds()))
        metrics.recordState(.closed)
    }

    /// Runs `call` when the guard lets it, recording its outcome: a thrown error counts as a failure unless it is an
    /// answer about the request; `failed` says whether a returned value is one (an authorizer's "no answer").
    func run<T: Sendable>(_ call: () async throws -> T, failed: (T) -> Bool = { _ in false }) async throws -> T {
        let probe = try await admit()
        let value: T
        do {
            value = try await call()
        } catch {
            finish(probe: probe, failed: Self.isFailure(error))
            throw error
        }
        finish(probe: probe, failed: failed(value))
        return value
    }

    /// The breaker now, for readiness: its state and, when open, why.
    var circuit: (state: CircuitState, reason: String?) {
        state.withLock { state in
            switch state.circuit {
            case .closed: (.closed, nil)
            case .halfOpen: (.halfOpen, state.openedBecause)
            case .open: (.open, state.openedBecause)
            }
        }
    }

    /// Calls now in flight.
    var inFlight: Int { state.withLock { $0.inFlight } }

    /// Calls now in line for a slot.
    var waiting: Int { state.withLock { $0.waiters.count } }

    // MARK: - Admission

    private enum Admission {
        case admitted(probe: Bool)
        case refused(TokenGateError)
        case queued
    }

    /// Takes a slot (or the probe), waiting in line when all are taken; throws the refusal.
    private func admit() async throws -> Bool {
        let admission = state.withLock { state in
            let admission = tryAdmit(&state)
            if case .queued = admission { state.nextWaiterID &+= 1 }
            return (admission, state.nextWaiterID)
        }
        let id: UInt64
        switch admission {
        case (.admitted(let probe), _):
            return probe
        case (.refused(let error), _):
            metrics.recordRefusal("circuit_open")
            throw error
        case (.queued, let waiterID):
            id = waiterID
        }
        // In line: a slot handed over by a finishing call, the breaker opening, the queue timeout or cancellation
        // ends the wait, whichever comes first.
        let timeout = settings.queueTimeout
        let timer = Task { [weak self] in
            try await Task.sleep(for: timeout)
            self?.expire(id)
        }
        defer { timer.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Bool, any Error>) in
                // A slot may have come free (or the breaker opened) between the first look and now.
                let admission = state.withLock { state -> Admission in
                    let admission = tryAdmit(&state, queueing: false)
                    if case .queued = admission { state.waiters.append(Waiter(id: id, continuation: continuation)) }
                    return admission
                }
                switch admission {
                case .admitted(let probe): continuation.resume(returning: probe)
                case .refused(let error):
                    metrics.recordRefusal("circuit_open")
                    continuation.resume(throwing: error)
                case .queued: break
                }
            }
        } onCancel: {
            let waiter = state.withLock { state in state.removeWaiter(id) }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    /// The `Retry-After` of a call refused for the queue: a second.
    private static let queueRetryAfter = 1

    private func tryAdmit(_ state: inout State, queueing: Bool = true) -> Admission {
        let now = clock.monotonicNanoseconds()
        switch state.circuit {
        case .open(let until) where now < until:
            return .refused(circuitOpenError(retryAfterNanoseconds: until - now))
        case .open:
            // The open time is over: this call is the probe.
            state.circuit = .halfOpen(probeInFlight: true)
            metrics.recordTransition(to: .halfOpen)
            state.inFlight += 1
            return .admitted(probe: true)
        case .halfOpen(let probeInFlight):
            if probeInFlight { return .refused(circuitOpenError(retryAfterNanoseconds: 1_000_000_000)) }
            state.circuit = .halfOpen(probeInFlight: true)
            state.inFlight += 1
            return .admitted(probe: true)
        case .closed:
            if state.inFlight < settings.maxConcurrentCalls, state.waiters.isEmpty || !queueing {
                state.inFlight += 1
                return .admitted(probe: false)
            }
            return .queued
        }
    }

    private func circuitOpenError(retryAfterNanoseconds: UInt64) -> TokenGateError {
        let seconds = Int((retryAfterNanoseconds + 999_999_999) / 1_000_000_000)
        return TokenGateError(
            .backendUnavailable, "the \(kind.rawValue) circuit is open: calls are refused for \(seconds)s", retryAfterSeconds: max(1, seconds))
    }

    private func queueFullError() -> TokenGateError {
        TokenGateError(
            .backendUnavailable,
            "\(settings.maxConcurrentCalls) \(kind.rawValue) calls in flight and no slot came free within \(settings.queueTimeout)",
            retryAfterSeconds: Self.queueRetryAfter)
    }

    /// The queue timeout of waiter `id`, if it is still in line.
    private func expire(_ id: UInt64) {
        guard let waiter = state.withLock({ $0.removeWaiter(id) }) else { return }
        metrics.recordRefusal("queue_full")
        waiter.continuation.resume(throwing: queueFullError())
    }

    // MARK: - Outcomes

    private func finish(probe: Bool, failed: Bool) {
        let now = clock.monotonicNanoseconds()
        var resumed: [Waiter] = []
        var refused: [Waiter] = []
        var transition: CircuitState?
        state.withLock { state in
            state.inFlight -= 1
            if let breaker = settings.circuitBreaker {
                transition = state.record(failed: failed, probe: probe, now: now, breaker: breaker)
            }
            if case .open = state.circuit {
                // Those in line would only be refused when their turn came: refused now.
                refused = state.waiters
                state.waiters.removeAll()
                return
            }
            // Hand the freed slots to the longest waiting.
            while state.inFlight < settings.maxConcurrentCalls, !state.waiters.isEmpty, case .closed = state.circuit {
                resumed.append(state.waiters.removeFirst())
                state.inFlight += 1
            }
        }
        if let transition { metrics.recordTransition(to: transition) }
        for waiter in resumed { waiter.continuation.resume(returning: false) }
        if !refused.isEmpty {
            let error = state.withLock { state -> TokenGateError in
                guard case .open(let until) = state.circuit else { return queueFullError() }
                return circuitOpenError(retryAfterNanoseconds: until > now ? until - now : 0)
            }
            for waiter in refused {
                metrics.recordRefusal("circuit_open")
                waiter.continuation.resume(throwing: error)
            }
        }
    }

    /// Whether a call's error says the callee (backend or authorizer) is unwell, rather than answering about this request.
    static func isFailure(_ error: any Error) -> Bool {
        if error is CancellationError { return false }
        guard let error = error as? TokenGateError else { return true }
        switch error.code {
        case .noTokenForContext, .forbidden, .unknownTokenType, .invalidRequest, .contextEnded: return false
        default: return true
        }
    }

    // MARK: - State

    private struct Waiter {
        var id: UInt64
        var continuation: CheckedContinuation<Bool, any Error>
    }

    private enum Circuit {
        case closed
        case open(until: UInt64)
        case halfOpen(probeInFlight: Bool)
    }

    private struct State {
        var circuit = Circuit.closed
        var openedBecause: String?
        var inFlight = 0
        var waiters: [Waiter] = []
        var nextWaiterID: UInt64 = 0
        var consecutiveFailures = 0
        var windowStart: UInt64
        var windowCalls = 0
        var windowFailures = 0

        init(windowStart: UInt64) { self.windowStart = windowStart }

        mutating func removeWaiter(_ id: UInt64) -> Waiter? {
            guard let index = waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return waiters.remove(at: index)
        }

        /// Counts one outcome; returns the state the breaker moved to, if it moved.
        mutating func record(failed: Bool, probe: Bool, now: UInt64, breaker: CircuitBreakerSettings) -> CircuitState? {
            let windowLength = TokenGateClock.nanoseconds(breaker.window)
            if now &- windowStart >= windowLength {
                (windowStart, windowCalls, windowFailures) = (now, 0, 0)
            }
            windowCalls += 1
            if failed {
                windowFailures += 1
                consecutiveFailures += 1
            } else {
                consecutiveFailures = 0
            }
            let openUntil = now + TokenGateClock.nanoseconds(breaker.openFor)
            if probe {
                if failed {
                    circuit = .open(until: openUntil)
                    openedBecause = "the probe call after \(breaker.openFor) open failed"
                    return .open
                }
                circuit = .closed
                openedBecause = nil
                (windowStart, windowCalls, windowFailures, consecutiveFailures) = (now, 0, 0, 0)
                return .closed
            }
            guard case .closed = circuit, failed else { return nil }
            if consecutiveFailures >= breaker.consecutiveFailures {
                openedBecause = "\(consecutiveFailures) calls failed in a row"
            } else if windowCalls >= breaker.minimumCalls, Double(windowFailures) >= breaker.failureRatio * Double(windowCalls) {
                openedBecause = "\(windowFailures) of \(windowCalls) calls failed within \(breaker.window)"
            } else {
                return nil
            }
            circuit = .open(until: openUntil)
            return .open
        }
    }
}
