package import Tracing

/// A tracer that passes everything to `base` except what the gateway never exports, whoever records it
/// (Hummingbird's server spans, AsyncHTTPClient's client spans, the gateway's own):
/// - URL queries: `url.query` is dropped and `url.full` loses its `?…` part. OpenTelemetry's HTTP conventions
///   record the URL a client called, and a tenant's upstream or authorizer URL may carry a key in its query
///   (`?key=${TOKEN_SERVER_KEY}`); a key cannot be told from a trip ID there, so no query is exported. The path
///   stays: routes and upstream paths are what an operator reads a trace by.
/// - Errors' text: a recorded error becomes its code and the fixed sentence callers get (``TokenGateError``), or
///   its type's name (any other). A reason may quote a backend's answer or name another tenant's client; it
///   stays in the log.
///
/// It also keeps the sampling decision (``TraceSampler``): work decided unsampled gets a span that records nothing
/// and draws no ID (its context, and so a caller's `traceparent`, still propagates), and work nobody decided for (a
/// refresh ahead, an acceptance check) is decided here, once, for it and its children. The exporter's own sampler
/// then samples whatever reaches it (parent-based, always on).
package struct RedactingTracer: Tracer {
    package typealias Span = RedactedSpan
    let base: any Tracer
    package let sampler: TraceSampler

    /// Wraps `base`, deciding new traces with `sampler`.
    package init(_ base: any Tracer, sampler: TraceSampler = .always) {
        self.base = base
        self.sampler = sampler
    }

    package func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> InstrumentationContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> RedactedSpan {
        var context = context()
        if context.traceSampled == nil { context.traceSampled = sampler.roll() }
        guard context.traceSampled == true else { return RedactedSpan(NoOpTracer.NoOpSpan(context: context)) }
        return RedactedSpan(
            Self.start(base, operationName, context: context, ofKind: kind, at: instant(), function: function, file: fileID, line: line))
    }

    private static func start<Base: Tracer, Instant: TracerInstant>(
        _ base: Base, _ operationName: String, context: InstrumentationContext, ofKind kind: SpanKind, at instant: Instant,
        function: String, file fileID: String, line: UInt
    ) -> any Tracing.Span {
        base.startSpan(operationName, context: context, ofKind: kind, at: instant, function: function, file: fileID, line: line)
    }

    @available(*, deprecated)
    package func forceFlush() { base.forceFlush() }

    package func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout InstrumentationContext, using extractor: Extract)
    where Extract.Carrier == Carrier {
        base.extract(carrier, into: &context, using: extractor)
    }

    package func inject<Carrier, Inject: Injector>(_ context: InstrumentationContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {
        base.inject(context, into: &carrier, using: injector)
    }

    /// An error as it may be exported.
    static func redacted(_ error: any Error) -> any Error {
        if let error = error as? TokenGateError { return TokenGateError(error.code, error.code.publicMessage) }
        return RedactedError(description: String(describing: type(of: error)))
    }

    /// Attributes as they may be exported: without a URL's query.
    static func redacted(_ attributes: SpanAttributes) -> SpanAttributes {
        // Most sets hold neither key: they pass without a copy.
        var attributes = attributes
        if attributes.get("url.query") != nil { attributes["url.query"] = nil }
        if case .string(let full)? = attributes.get("url.full"), let mark = full.firstIndex(where: { $0 == "?" || $0 == "#" }) {
            attributes["url.full"] = String(full[..<mark])
        }
        return attributes
    }
}

/// A span of ``RedactingTracer``: its attributes and errors are redacted as they are recorded.
package struct RedactedSpan: Tracing.Span {
    let base: any Tracing.Span

    init(_ base: any Tracing.Span) { self.base = base }

    package var context: InstrumentationContext { base.context }
    package var operationName: String {
        get { base.operationName }
        nonmutating set { base.operationName = newValue }
    }
    package var attributes: SpanAttributes {
        get { base.attributes }
        // A span not sampled keeps nothing: nothing to redact.
        nonmutating set { if base.isRecording { base.attributes = RedactingTracer.redacted(newValue) } }
    }
    package var isRecording: Bool { base.isRecording }
    package func setStatus(_ status: SpanStatus) { base.setStatus(status) }
    package func recordError<Instant: TracerInstant>(_ error: any Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant) {
        base.recordError(RedactingTracer.redacted(error), attributes: RedactingTracer.redacted(attributes), at: instant())
    }
    package func addEvent(_ event: SpanEvent) {
        var event = event
        event.attributes = RedactingTracer.redacted(event.attributes)
        base.addEvent(event)
    }
    package func addLink(_ link: SpanLink) { base.addLink(link) }
    package func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) { base.end(at: instant()) }
}

/// An error other than the gateway's own, as exported: its type's name alone.
struct RedactedError: Error, CustomStringConvertible {
    let description: String
}
