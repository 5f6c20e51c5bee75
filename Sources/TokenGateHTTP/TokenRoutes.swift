import HTTPTypes
package import Hummingbird
import JOSE
import NIOCore
package import TokenGateCore

/// The token API: `GET /v1/providers/{providerId}/tokens/{tokenType}`, the providers' JWKS and health checks.
package struct TokenRoutes: Sendable {
    let endpoint: TokenEndpoint
    var service: TokenService { endpoint.service }

    /// Creates the routes over a token service.
    package init(service: TokenService, limits: RequestLimits = RequestLimits(), clock: TokenGateClock = .system) {
        endpoint = TokenEndpoint(service: service, limits: limits, clock: clock)
    }

    static let tokenPath = "/v1/providers/:providerId/tokens/:tokenType"
    static let jwksPath = "/v1/providers/:providerId/jwks.json"

    /// Every path ``register(on:)`` adds, with the methods it answers (the `Allow` of a 405).
    static let table = RouteTable([
        .init(path: tokenPath, allow: "GET, OPTIONS"),
        .init(path: samplesPath, allow: "GET, OPTIONS"),
        .init(path: samplesContextPath, allow: "GET, OPTIONS"),
        .init(path: jwksPath, allow: "GET"),
        .init(path: "/healthz", allow: "GET"),
        .init(path: "/readyz", allow: "GET"),
    ])

    /// Adds the routes to `router`.
    package func register(on router: Router<TokenGateRequestContext>) {
        router.get(RouterPath(Self.tokenPath)) { request, context in
            await self.token(request, context)
        }
        router.on(RouterPath(Self.tokenPath), method: .options) { request, context in
            try self.preflight(request, context)
        }
        for path in [Self.samplesPath, Self.samplesContextPath] {
            router.get(RouterPath(path)) { request, context in
                await self.sampleToken(request, context)
            }
            router.on(RouterPath(path), method: .options) { request, context in
                try self.preflight(request, context)
            }
        }
        router.get(RouterPath(Self.jwksPath)) { _, context in
            let bytes = try self.service.publicKeys(providerID: context.parameters.get("providerId") ?? "")
            return Self.json(bytes, status: .ok, cacheControl: "public, max-age=300")
        }
        router.get("/healthz") { _, _ in
            Self.json(Self.healthBody, status: .ok, cacheControl: "no-store")
        }
        router.get("/readyz") { _, _ in
            Self.readiness(of: self.service, detailed: false)
        }
    }

    /// `/readyz`: 200 while this process can serve (``GatewayReadiness``: one tenant that cannot never makes it 503
    /// by itself), else 503. Liveness is `/healthz`. On the public listener the answer is the status alone: the
    /// details name every tenant, its state, since when and why (URLs, errors), and a caller never reads anything
    /// about another tenant; the admin listener gives them (`detailed`).
    static func readiness(of service: TokenService, detailed: Bool) -> Response {
        let readiness = service.readiness()
        var body: JSONObject = ["status": .string(readiness.isReady ? "ready" : "not_ready")]
        if detailed {
            let generation = service.generation
            if !readiness.reasons.isEmpty { body["reasons"] = .array(readiness.reasons.map(JSONValue.string)) }
            body["generation"] = .integer(Int64(generation.number))
            body["configSha256"] = .string(generation.configurationDigest)
            var providers = JSONObject()
            for provider in readiness.providers {
                providers[provider.id.rawValue] = .object(Self.details(of: provider, acceptance: service.acceptance.entries(of: provider.id)))
            }
            body["providers"] = .object(providers)
        }
        return json(JSON.serialize(.object(body)), status: readiness.isReady ? .ok : .serviceUnavailable, cacheControl: "no-store")
    }

    /// `/readyz/providers/{providerId}` (admin listener): 200 while that provider can serve (ready or degraded), else
    /// 503, with its details; for an orchestrator or a check that follows one tenant.
    static func providerReadiness(of service: TokenService, providerID: String) -> Response {
        guard let provider = service.readiness().providers.first(where: { $0.id.rawValue == providerID }) else {
            return TokenGateError(.unknownProvider, "no provider with that ID").response()
        }
        var body: JSONObject = ["provider": .string(provider.id.rawValue)]
        for (key, value) in details(of: provider, acceptance: service.acceptance.entries(of: provider.id)) { body[key] = value }
        return json(
            JSON.serialize(.object(body)), status: provider.readiness.isReady ? .ok : .serviceUnavailable, cacheControl: "no-store")
    }

    /// One provider's entry in the admin readiness: its state, since when (RFC 3339, UTC), whether it gates the
    /// process, its reasons, and what its acceptance check last found per token type (`fleetEngine`).
    private static func details(of provider: GatewayReadiness.Provider, acceptance: [TokenType: AcceptanceResults.Entry]) -> JSONObject {
        var entry: JSONObject = [
            "state": .string(provider.readiness.state.rawValue), "since": .string(provider.sinceText),
        ]
        if provider.isRequired { entry["required"] = .bool(true) }
        if !provider.readiness.reasons.isEmpty { entry["reasons"] = .array(provider.readiness.reasons.map(JSONValue.string)) }
        if !acceptance.isEmpty {
            var fleetEngine = JSONObject()
            for (type, check) in acceptance {
                var result: JSONObject = [
                    "verdict": .string(check.outcome.verdict.rawValue), "checkedAt": .string(check.checkedAtText),
                    "since": .string(check.sinceText), "detail": .string(check.outcome.detail),
                ]
                if let status = check.outcome.status { result["status"] = .integer(Int64(status)) }
                if let googleStatus = check.outcome.googleStatus { result["googleStatus"] = .string(googleStatus) }
                if let last = check.lastVerdict { result["lastVerdict"] = .string(last.verdict.rawValue) }
                fleetEngine[type.rawValue] = .object(result)
            }
            entry["fleetEngine"] = .object(fleetEngine)
        }
        return entry
    }

    static let healthBody = Array(#"{"status":"ok"}"#.utf8)

    /// `GET …/tokens/{tokenType}?{context}`: TokenGate's own body, or the provider's `response:` shape.
    private func token(_ request: Request, _ context: TokenGateRequestContext) async -> Response {
        await serve(request, context) { request throws(TokenGateError) in
            (context.parameters.get("tokenType") ?? "", try QueryParameters.parse(request.uri.query, limits: endpoint.limits))
        } render: { grant in
            endpoint.tokenBody(grant)
        }
    }

    /// One token request, whatever route it came by, answered by the ``TokenEndpoint``: `resolve` names the token
    /// type and context parameters (or refuses), `render` makes a token's body. Answers errors itself rather than
    /// throwing them, so a browser's request gets its CORS headers on a 401 or 429 too and the page can read why.
    func serve(
        _ request: Request, _ context: TokenGateRequestContext,
        resolve: (Request) throws(TokenGateError) -> (tokenType: String, parameters: [String: String]),
        render: (TokenGrant) -> ByteBuffer
    ) async -> Response {
        let answer = await endpoint.answer(
            target: request.uri.string, providerID: context.parameters.get("providerId") ?? "",
            tokenTypeName: context.parameters.get("tokenType") ?? Self.tokenTypeName(ofSampleType: context.parameters.get("sampleType")),
            fields: context.fields, requestID: context.requestID, peer: context.peer
        ) { () throws(TokenGateError) in
            try resolve(request)
        } body: {
            render($0)
        }
        var response = answer.response()
        // Only browsers send Origin: apps and backends pay nothing here.
        if let origin = context.origin, corsPolicy(context)?.allows(origin) == true {
            response.headers.append(contentsOf: Self.corsHeaders(origin: origin))
        }
        return response
    }

    /// A sample route's type as the token type it names for logs and metrics (`delivery_driver`: `delivery-driver`).
    static func tokenTypeName(ofSampleType sampleType: String?) -> String {
        String((sampleType ?? "").map { $0 == "_" ? "-" : $0 })
    }

    static func json(_ bytes: [UInt8], status: HTTPResponse.Status, cacheControl: String) -> Response {
        json(ByteBuffer(bytes: bytes), status: status, cacheControl: cacheControl)
    }

    static func json(_ buffer: ByteBuffer, status: HTTPResponse.Status, cacheControl: String) -> Response {
        Response(status: status, headers: TokenAnswer.jsonHeaders(cacheControl: cacheControl), body: .init(byteBuffer: buffer))
    }
}
