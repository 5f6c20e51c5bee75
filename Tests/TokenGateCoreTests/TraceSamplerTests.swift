import InMemoryTracing
import Testing
import Tracing

@testable import TokenGateCore

/// The sampling decision: a caller's valid `traceparent` decides by its flag, anything else is a new trace decided by
/// the ratio; and work decided unsampled records nothing, children included.
@Suite struct TraceSamplerTests {
    static let traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let parentID = "00f067aa0ba902b7"

    @Test(arguments: [
        ("00-\(traceID)-\(parentID)-01", true), ("00-\(traceID)-\(parentID)-00", false), ("00-\(traceID)-\(parentID)-0b", true),
        ("00-\(traceID)-\(parentID)-0a", false), ("00-\(traceID)-\(parentID)-10", false), ("00-\(traceID)-\(parentID)-ff", true),
        ("cc-\(traceID)-\(parentID)-01-later-fields", true),
    ])
    func aValidTraceparentDecidesByItsFlag(traceparent: String, sampled: Bool) {
        #expect(TraceSampler.sampledFlag(of: traceparent) == sampled)
        // Whatever the ratio: the caller's decision is followed.
        #expect(TraceSampler(ratio: sampled ? 0 : 1).isSampled(traceparent: traceparent) == sampled)
    }

    @Test(arguments: [
        "", "00-\(traceID)-\(parentID)-1", "00-\(traceID)-\(parentID)-01-extra", "ff-\(traceID)-\(parentID)-01",
        "00-\(traceID.uppercased())-\(parentID)-01", "00-\(String(repeating: "0", count: 32))-\(parentID)-01",
        "00-\(traceID)-0000000000000000-01", "00_\(traceID)-\(parentID)-01", "00-\(traceID)-\(parentID)-0g",
        "00-\(traceID)-\(parentID)-01, 00-\(traceID)-\(parentID)-01",
    ])
    func anInvalidTraceparentIsANewTrace(traceparent: String) {
        #expect(TraceSampler.sampledFlag(of: traceparent) == nil)
        #expect(!TraceSampler(ratio: 0).isSampled(traceparent: traceparent))
        #expect(TraceSampler(ratio: 1).isSampled(traceparent: traceparent))
    }

    @Test func newTracesAreSampledAtTheRatio() {
        let sampler = TraceSampler(ratio: 0.1)
        let sampled = (0..<100_000).count { _ in sampler.roll() }
        // 10,000 expected; the standard deviation is under 95.
        #expect((9_500...10_500).contains(sampled), "\(sampled) of 100,000")
        #expect(!(0..<1_000).contains { _ in TraceSampler(ratio: 0).roll() })
    }

    @Test func workDecidedUnsampledRecordsNothingAndWorkNobodyDecidedForIsDecidedOnce() {
        let base = InMemoryTracer()
        let never = RedactingTracer(base, sampler: TraceSampler(ratio: 0))
        // A root nobody decided for: decided here, and its children follow it.
        let root = never.startSpan("tokengate.backend")
        let child = never.startSpan("GET", context: root.context, ofKind: .client)
        #expect(!root.isRecording && !child.isRecording && child.context.traceSampled == false)
        // A request its door decided to sample is recorded whatever the ratio; one decided against is not.
        var decided = ServiceContext.topLevel
        decided.traceSampled = true
        let sampled = never.startSpan("tokengate.cache", context: decided)
        decided.traceSampled = false
        let unsampled = RedactingTracer(base).startSpan("tokengate.cache", context: decided)
        for span in [root, child, sampled, unsampled] { span.end() }
        #expect(base.finishedSpans.map(\.operationName) == ["tokengate.cache"])
    }
}
