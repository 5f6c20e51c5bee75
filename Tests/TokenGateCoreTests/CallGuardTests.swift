import Synchronization
import Testing
import TokenGateCoreTesting

@testable import TokenGateCore

/// The guard around a provider's outbound calls, here its backend calls: its breaker on a hand-moved clock, its queue in real time (short).
@Suite struct CallGuardTests {
    struct Sick: Error {}

    /// The order in which calls ran.
    final class Holders: Sendable {
        let values = Mutex<[Int]>([])
    }

    static func makeGuard(
        _ clock: ManualClock, maxConcurrentCalls: Int = 64, queueTimeout: Duration = .seconds(1),
        breaker: CircuitBreakerSettings? = CircuitBreakerSettings()
    ) -> CallGuard {
        var settings = BackendGuardSettings()
        settings.maxConcurrentCalls = maxConcurrentCalls
        settings.queueTimeout = queueTimeout
        settings.circuitBreaker = breaker
        return CallGuard(.backend, settings: settings, clock: clock.gatewayClock, metrics: .none)
    }

    /// The error the guard itself threw, or nil when it ran the call (whatever the call did).
    static func refusal(_ callGuard: CallGuard, failing: Bool = false) async -> TokenGateError? {
        do {
            _ = try await callGuard.run { if failing { throw Sick() } }
            return nil
        } catch let error as TokenGateError {
            return error
        } catch {
            return nil
        }
    }

    @Test func fiveFailuresInARowOpenTheCircuitWhichRefusesAtOnceThenLetsOneProbeThrough() async throws {
        let clock = ManualClock(wallSeconds: 1_700_000_000)
        let callGuard = Self.makeGuard(clock)
        for _ in 0..<4 { #expect(await Self.refusal(callGuard, failing: true) == nil) }
        #expect(callGuard.circuit.state == .closed)
        #expect(await Self.refusal(callGuard, failing: true) == nil)
        #expect(callGuard.circuit.state == .open)
        #expect(callGuard.circuit.reason == "5 calls failed in a row")

        let refused = try #require(await Self.refusal(callGuard))
        #expect(refused.code == .backendUnavailable)
        #expect(refused.retryAfterSeconds == 10)
        clock.advance(by: .seconds(9))
        #expect(await Self.refusal(callGuard)?.retryAfterSeconds == 1)

        // After openFor, one probe: it fails, and the circuit opens for another openFor.
        clock.advance(by: .seconds(1))
        #expect(await Self.refusal(callGuard, failing: true) == nil)
        #expect(callGuard.circuit.state == .open)
        #expect(await Self.refusal(callGuard)?.retryAfterSeconds == 10)

        // The next probe succeeds: closed, and the failure count starts again.
        clock.advance(by: .seconds(10))
        #expect(await Self.refusal(callGuard) == nil)
        #expect(callGuard.circuit.state == .closed)
        for _ in 0..<4 { #expect(await Self.refusal(callGuard, failing: true) == nil) }
        #expect(callGuard.circuit.state == .closed)
    }

    @Test func whileTheProbeIsOutEveryOtherCallIsRefused() async throws {
        let clock = ManualClock(wallSeconds: 1_700_000_000)
        var breaker = CircuitBreakerSettings()
        breaker.consecutiveFailures = 1
        let callGuard = Self.makeGuard(clock, breaker: breaker)
        #expect(await Self.refusal(callGuard, failing: true) == nil)
        clock.advance(by: .seconds(10))
        let release = AsyncStream<Void>.makeStream()
        let probe = Task { try await callGuard.run { for await _ in release.stream {} } }
        try await yieldUntil { callGuard.inFlight == 1 }
        #expect(callGuard.circuit.state == .halfOpen)
        #expect(await Self.refusal(callGuard)?.retryAfterSeconds == 1)
        release.continuation.finish()
        try await probe.value
        #expect(callGuard.circuit.state == .closed)
        #expect(await Self.refusal(callGuard) == nil)
    }

    @Test func aFailureRatioOverTheWindowOpensItWithoutAnUnbrokenRun() async throws {
        let clock = ManualClock(wallSeconds: 1_700_000_000)
        var breaker = CircuitBreakerSettings()
        breaker.minimumCalls = 10
        breaker.failureRatio = 0.5
        let callGuard = Self.makeGuard(clock, breaker: breaker)
        // Alternating: never two failures in a row, half of all calls failed.
        for index in 0..<9 { _ = await Self.refusal(callGuard, failing: index.isMultiple(of: 2)) }
        #expect(callGuard.circuit.state == .closed)
        _ = await Self.refusal(callGuard, failing: true)
        #expect(callGuard.circuit.state == .open)
        #expect(callGuard.circuit.reason == "6 of 10 calls failed within 30.0 seconds")

        // The same failures spread over two windows do not.
        let spread = Self.makeGuard(clock, breaker: breaker)
        for index in 0..<10 {
            if index == 5 { clock.advance(by: .seconds(30)) }
            _ = await Self.refusal(spread, failing: index.isMultiple(of: 2))
        }
        #expect(spread.circuit.state == .closed)
    }

    @Test func answersAboutTheRequestAreNotFailures() async throws {
        let clock = ManualClock(wallSeconds: 1_700_000_000)
        let callGuard = Self.makeGuard(clock)
        for code in [TokenGateError.Code.noTokenForContext, .forbidden, .contextEnded, .noTokenForContext, .forbidden, .unknownTokenType] {
            await #expect(throws: TokenGateError.self) { try await callGuard.run { throw TokenGateError(code, "an answer") } }
        }
        #expect(callGuard.circuit.state == .closed)
        for code in [TokenGateError.Code.backendTimeout, .backendError, .backendUnavailable, .backendTimeout, .internalError] {
            await #expect(throws: TokenGateError.self) { try await callGuard.run { throw TokenGateError(code, "sick") } }
        }
        #expect(callGuard.circuit.state == .open)
    }

    @Test func aReturnedValueTheCallerCallsAFailureCounts() async throws {
        let callGuard = Self.makeGuard(ManualClock(wallSeconds: 1_700_000_000))
        for _ in 0..<5 { _ = try await callGuard.run({ "no answer" }, failed: { $0 == "no answer" }) }
        #expect(callGuard.circuit.state == .open)
    }

    @Test func withTheBreakerOffFailuresNeverRefuseACall() async throws {
        let callGuard = Self.makeGuard(ManualClock(wallSeconds: 1_700_000_000), breaker: nil)
        for _ in 0..<50 { #expect(await Self.refusal(callGuard, failing: true) == nil) }
        #expect(callGuard.circuit.state == .closed)
    }

    @Test func pastTheCapACallWaitsItsQueueTimeoutThenIsRefused() async throws {
        let callGuard = Self.makeGuard(ManualClock(wallSeconds: 1_700_000_000), maxConcurrentCalls: 2, queueTimeout: .milliseconds(200))
        let release = AsyncStream<Void>.makeStream()
        let held = (0..<2).map { _ in Task { try await callGuard.run { for await _ in release.stream {} } } }
        try await yieldUntil { callGuard.inFlight == 2 }
        let started = ContinuousClock.now
        let refused = try #require(await Self.refusal(callGuard))
        #expect(refused.code == .backendUnavailable)
        #expect(refused.retryAfterSeconds == 1)
        #expect(ContinuousClock.now - started >= .milliseconds(200))
        release.continuation.finish()
        for task in held { try await task.value }
        #expect(callGuard.inFlight == 0)
        // Timeouts in line are not the backend's failures.
        #expect(callGuard.circuit.state == .closed)
    }

    @Test func aSlotThatComesFreeGoesToTheLongestWaiting() async throws {
        // A queue timeout no loaded run reaches: the slot must come from the call that finishes.
        let callGuard = Self.makeGuard(ManualClock(wallSeconds: 1_700_000_000), maxConcurrentCalls: 1, queueTimeout: .seconds(600))
        let release = AsyncStream<Void>.makeStream()
        let held = Task { try await callGuard.run { for await _ in release.stream {} } }
        try await yieldUntil { callGuard.inFlight == 1 }
        let order = Holders()
        let first = Task { try await callGuard.run { order.values.withLock { $0.append(1) } } }
        try await yieldUntil { callGuard.waiting == 1 }
        let second = Task { try await callGuard.run { order.values.withLock { $0.append(2) } } }
        try await yieldUntil { callGuard.waiting == 2 }
        #expect(callGuard.inFlight == 1)
        release.continuation.finish()
        try await held.value
        try await first.value
        try await second.value
        #expect(order.values.withLock { $0 } == [1, 2])
        #expect(callGuard.inFlight == 0)
    }

    @Test func whenTheCircuitOpensThoseInLineAreRefusedAtOnce() async throws {
        var breaker = CircuitBreakerSettings()
        breaker.consecutiveFailures = 1
        // A queue timeout no loaded run reaches: the refusal must come from the breaker.
        let callGuard = Self.makeGuard(ManualClock(wallSeconds: 1_700_000_000), maxConcurrentCalls: 1, queueTimeout: .seconds(600), breaker: breaker)
        let release = AsyncStream<Void>.makeStream()
        let failing = Task {
            try await callGuard.run {
                for await _ in release.stream {}
                throw Sick()
            }
        }
        try await yieldUntil { callGuard.inFlight == 1 }
        let started = ContinuousClock.now
        let waiter = Task { await Self.refusal(callGuard) }
        try await Task.sleep(for: .milliseconds(20))
        release.continuation.finish()
        await #expect(throws: Sick.self) { try await failing.value }
        let refused = try #require(await waiter.value)
        #expect(refused.reason.contains("circuit is open"))
        #expect(ContinuousClock.now - started < .seconds(300))
    }

    @Test func aCancelledWaiterLeavesTheLine() async throws {
        let callGuard = Self.makeGuard(ManualClock(wallSeconds: 1_700_000_000), maxConcurrentCalls: 1, queueTimeout: .seconds(600))
        let release = AsyncStream<Void>.makeStream()
        let held = Task { try await callGuard.run { for await _ in release.stream {} } }
        try await yieldUntil { callGuard.inFlight == 1 }
        let waiter = Task { try await callGuard.run { "ran" } }
        try await Task.sleep(for: .milliseconds(20))
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        release.continuation.finish()
        try await held.value
        #expect(try await callGuard.run { "next" } == "next")
    }
}
