import HTTPTypes
import Hummingbird
import TokenGateCore

// Browser CORS for the token route, per provider (`cors:` in config.yaml).
//
// No `Access-Control-Allow-Credentials`: in CORS, "credentials" are what the browser attaches by itself
// (cookies, HTTP authentication it manages, TLS client certificates). A page calling TokenGate sets the
// `Authorization` header in its own code, which needs only `Access-Control-Allow-Headers: Authorization`; allowing
// credentials as well would let listed pages send cookies TokenGate never reads. Least privilege: leave it out.
extension TokenRoutes {
    /// What a listed origin's browser may read besides the safelisted headers.
    static let exposedHeaders = "Retry-After, X-Request-ID, RateLimit-Policy, RateLimit"
    /// What a page may send: the credential, and its own request ID.
    static let allowedRequestHeaders = "Authorization, X-Request-ID"

    /// The headers that let a page on `origin` (a listed one) read an answer.
    static func corsHeaders(origin: String) -> HTTPFields {
        [.accessControlAllowOrigin: origin, .vary: "Origin", .accessControlExposeHeaders: exposedHeaders]
    }

    /// The CORS policy of the provider the request names, if it has one.
    func corsPolicy(_ context: TokenGateRequestContext) -> CORSPolicy? {
        guard let id = context.parameters.get("providerId").flatMap(ProviderID.init) else { return nil }
        return service.generation.providers[id]?.settings.cors
    }

    /// `OPTIONS` on the token route: a CORS preflight from a listed origin gets 204 with what the page may do; one
    /// from any other origin (or for a provider without CORS) 403 `origin_not_allowed`, without CORS headers. An
    /// `OPTIONS` that is no preflight learns the methods (`Allow`).
    func preflight(_ request: Request, _ context: TokenGateRequestContext) throws(TokenGateError) -> Response {
        guard let origin = context.origin, request.headers.contains(.accessControlRequestMethod) else {
            return Response(status: .noContent, headers: [.allow: "GET, OPTIONS"])
        }
        guard let policy = corsPolicy(context), policy.allows(origin) else {
            let error = TokenGateError(.originNotAllowed, "a preflight from an origin the provider does not list")
            service.recordDenial(
                error, providerID: context.parameters.get("providerId") ?? "", tokenType: context.parameters.get("tokenType") ?? "",
                peer: context.peer, requestID: context.requestID)
            throw error
        }
        return Response(
            status: .noContent,
            headers: [
                .accessControlAllowOrigin: origin,
                .vary: "Origin",
                .accessControlAllowMethods: "GET",
                .accessControlAllowHeaders: Self.allowedRequestHeaders,
                .accessControlMaxAge: String(policy.maxAgeSeconds),
            ]
        )
    }
}
