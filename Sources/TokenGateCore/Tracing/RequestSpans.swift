import Tracing

/// The spans a token request makes inside the gateway, children of the HTTP server span: authentication, the
/// tenant's authorizer, the cache, the backend call and the verification. With no tracer (tracing off, the
/// default), or for a request its door decided not to sample (``TraceSampler``), nothing is started and no
/// task-local is set: an untraced request pays one nil check per step.
///
/// A span carries the provider and the token type, the cache's outcome and an error's stable code; never a
/// token, a credential, a context ID or an error's text (those stay in the logs, as callers' answers do).
struct RequestSpans: Sendable {
    let tracer: (any Tracer)?

    enum Name: String {
        case authenticate = "tokengate.authenticate"
        case authorize = "tokengate.authorize"
        case cache = "tokengate.cache"
        case backend = "tokengate.backend"
        case verify = "tokengate.verify"
    }

    /// Runs `body` in a span named `name`, the current span while it runs (so the HTTP calls it makes carry it
    /// in `traceparent`); an error ends it with status error and the error's code.
    func run<T, E: Error>(
        _ name: Name, provider: ProviderID, tokenType: TokenType, _ body: (ActiveSpan) async throws(E) -> T
    ) async throws(E) -> T {
        guard let tracer = activeTracer else { return try await body(ActiveSpan(span: nil)) }
        let span = start(tracer, name, provider: provider, tokenType: tokenType)
        defer { span.end() }
        let result: Result<T, E> = await ServiceContext.$current.withValue(span.context) {
            do throws(E) { return .success(try await body(ActiveSpan(span: span))) } catch { return .failure(error) }
        }
        if case .failure(let error) = result { Self.fail(span, error) }
        return try result.get()
    }

    /// `body`, synchronous and with no child spans, in a span named `name`; `describe` names the provider and
    /// type once they are known (a request can be refused before they are).
    func run<T>(
        _ name: Name, _ body: () throws(TokenGateError) -> T, describe: (T) -> (ProviderID, TokenType)
    ) throws(TokenGateError) -> T {
        guard let tracer = activeTracer else { return try body() }
        let span = tracer.startAnySpan(name.rawValue, context: ServiceContext.current ?? .topLevel, ofKind: .internal)
        defer { span.end() }
        do {
            let value = try body()
            let (provider, tokenType) = describe(value)
            Self.tag(span, provider: provider, tokenType: tokenType)
            return value
        } catch {
            Self.fail(span, error)
            throw error
        }
    }

    /// The tracer, unless this request was decided unsampled.
    private var activeTracer: (any Tracer)? {
        guard let tracer, ServiceContext.current?.traceSampled != false else { return nil }
        return tracer
    }

    private func start(_ tracer: any Tracer, _ name: Name, provider: ProviderID, tokenType: TokenType) -> any Span {
        let span = tracer.startAnySpan(name.rawValue, context: ServiceContext.current ?? .topLevel, ofKind: .internal)
        Self.tag(span, provider: provider, tokenType: tokenType)
        return span
    }

    private static func tag(_ span: any Span, provider: ProviderID, tokenType: TokenType) {
        span.updateAttributes { attributes in
            attributes[Attribute.provider] = provider.rawValue
            attributes[Attribute.tokenType] = tokenType.rawValue
        }
    }

    /// Status error with the code alone: an error's message may quote a backend's answer.
    private static func fail(_ span: any Span, _ error: any Error) {
        let code = (error as? TokenGateError)?.code.rawValue ?? (error is CancellationError ? "cancelled" : "internal")
        span.attributes[Attribute.errorCode] = code
        span.setStatus(SpanStatus(code: .error, message: code))
    }

    /// What a step may add to its span while it runs; nothing when tracing is off.
    struct ActiveSpan {
        fileprivate let span: (any Span)?

        func note(_ outcome: TokenCacheOutcome) { span?.attributes[Attribute.cacheOutcome] = outcome.rawValue }
        func note(backend type: String) { span?.attributes[Attribute.backend] = type }
    }

    /// The attribute names, in the `tokengate.` namespace.
    enum Attribute {
        static let provider = "tokengate.provider"
        static let tokenType = "tokengate.token_type"
        static let errorCode = "tokengate.error.code"
        static let cacheOutcome = "tokengate.cache.outcome"
        static let backend = "tokengate.backend"
    }
}
