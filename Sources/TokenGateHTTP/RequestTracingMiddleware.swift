import HTTPTypes
import Hummingbird
import TokenGateCore
import Tracing

/// The outermost middleware when tracing is on: one server span per request, continuing the caller's W3C
/// `traceparent`, current while the request is handled (so the gateway's steps and the HTTP calls they make are
/// its children), ended when the answer is ready.
///
/// Hummingbird's `TracingMiddleware` would end the span after the body is written, through a post-write hook on
/// the body; the writer then flushes the body apart from the head (1.5 `write(2)` calls per answer instead of
/// one `writev(2)`, measured), a cost every traced token answer would pay. Outermost, it sees the final status of
/// every answer, errors rendered included. It records the method, route, path and status: no query, no header.
///
/// A request is sampled or not once (``TraceSampler``): by the event loop's handler when there is one (it says so
/// in `TokenGate-Trace-Sampled`, having removed any copy a client sent), here otherwise. An unsampled one gets no
/// span: its context carries the decision to every step and the caller's `traceparent` to every call out.
struct RequestTracingMiddleware: RouterMiddleware {
    typealias Context = TokenGateRequestContext
    let tracer: any Tracer
    let sampler: TraceSampler
    /// The event loop's handler decided for every request already.
    let decidedAtTheDoor: Bool

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var parent = ServiceContext.current ?? .topLevel
        parent.traceSampled =
            decidedAtTheDoor
            ? request.headers[.traceDecision] == "1" : sampler.isSampled(traceparent: request.headers[.traceparent])
        tracer.extract(request.headers, into: &parent, using: HTTPFieldsExtractor())
        guard parent.traceSampled == true else {
            return try await ServiceContext.$current.withValue(parent) { try await next(request, context) }
        }
        let method = request.method.rawValue
        let span = Self.startServerSpan(tracer, method, context: parent)
        defer { span.end() }
        span.updateAttributes { attributes in
            attributes["http.request.method"] = method
            attributes["url.path"] = request.uri.path
        }
        let response = try await ServiceContext.$current.withValue(span.context) { try await next(request, context) }
        if let route = context.endpointPath { span.operationName = "\(method) \(route)" }
        let status = Int(response.status.code)
        span.updateAttributes { attributes in
            attributes["http.route"] = context.endpointPath
            attributes["http.response.status_code"] = status
        }
        // OpenTelemetry's rule for servers: a 4xx is the caller's error, not the server's.
        if status >= 500 { span.setStatus(SpanStatus(code: .error)) }
        return response
    }

    private static func startServerSpan<T: Tracer>(_ tracer: T, _ method: String, context: ServiceContext) -> any Span {
        tracer.startSpan(method, context: context, ofKind: .server)
    }
}

extension HTTPField.Name {
    /// W3C Trace Context's propagated parent.
    static let traceparent = HTTPField.Name("traceparent")!
    /// The event loop handler's sampling decision for a request it hands on: `1` or `0`.
    static let traceDecision = HTTPField.Name("TokenGate-Trace-Sampled")!
}

/// Reads a propagated context (`traceparent`, `tracestate`) from a request's header fields.
private struct HTTPFieldsExtractor: Extractor {
    func extract(key: String, from fields: HTTPFields) -> String? {
        HTTPField.Name(key).flatMap { fields[$0] }
    }
}
