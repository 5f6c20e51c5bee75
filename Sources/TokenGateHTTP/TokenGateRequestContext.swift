public import Hummingbird

/// Per-request state for TokenGate routes.
public struct TokenGateRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
    }
}
