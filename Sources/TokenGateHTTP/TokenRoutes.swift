import HTTPTypes
package import Hummingbird
import JOSE
import NIOCore
package import TokenGateCore

/// The token API: `GET /v1/providers/{providerId}/tokens/{tokenType}`, the providers' JWKS and health checks.
package struct TokenRoutes: Sendable {
    let service: TokenService
    let limits: RequestLimits
    let clock: TokenGateClock

    /// Creates the routes over a token service.
    package init(service: TokenService, limits: RequestLimits = RequestLimits(), clock: TokenGateClock = .system) {
        self.service = service
        self.limits = limits
        self.clock = clock
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
            (context.parameters.get("tokenType") ?? "", try QueryParameters.parse(request.uri.query, limits: limits))
        } render: { grant in
            Self.json(Self.tokenBody(grant, clock: clock), status: .ok, cacheControl: "no-store")
        }
    }

    /// The token route's body for `grant`, now.
    static func tokenBody(_ grant: TokenGrant, clock: TokenGateClock) -> ByteBuffer {
        TokenResponse.body(for: grant, now: clock.wallSeconds())
    }

    /// One token request, whatever route it came by: `resolve` names the token type and context parameters (or
    /// refuses), `render` makes the answer. Answers errors itself rather than throwing them, so a browser's request
    /// gets its CORS headers on a 401 or 429 too and the page can read why.
    func serve(
        _ request: Request, _ context: TokenGateRequestContext,
        resolve: (Request) throws(TokenGateError) -> (tokenType: String, parameters: [String: String]),
        render: (TokenGrant) -> Response
    ) async -> Response {
        var response: Response
        do throws(TokenGateError) {
            let providerID = context.parameters.get("providerId") ?? ""
            let query = try self.query(
                target: request.uri.string, authorization: Self.authorization(request.headers), providerID: providerID, peer: context.peer,
                requestID: context.requestID
            ) { () throws(TokenGateError) in
                try resolve(request)
            } deniedType: {
                context.parameters.get("tokenType") ?? Self.tokenTypeName(ofSampleType: context.parameters.get("sampleType"))
            }
            let grant = try await service.token(for: query)
            response = render(grant)
            Self.appendRateLimits(grant.rateLimits, to: &response.headers)
        } catch {
            response = error.response()
        }
        // Only browsers send Origin: apps and backends pay nothing here.
        if let origin = context.origin, corsPolicy(context)?.allows(origin) == true {
            response.headers.append(contentsOf: Self.corsHeaders(origin: origin))
        }
        return response
    }

    /// The service's query for a token request to `target` (the request target, path and query) with the
    /// `Authorization` value `authorization`.
    ///
    /// Refuses what the HTTP face checks itself, before anything else runs: an oversized URL or `Authorization`,
    /// then what `resolve` refuses (a bad query string). Such a refusal is counted and logged with the service's
    /// own denials, under the token type `deniedType` names. Every token route, and the event loop's answer to a
    /// cached hit, builds its query here.
    func query(
        target: String, authorization: String?, providerID: String, peer: PeerAddress?, requestID: String,
        resolve: () throws(TokenGateError) -> (tokenType: String, parameters: [String: String]),
        deniedType: () -> String
    ) throws(TokenGateError) -> TokenQuery {
        do throws(TokenGateError) {
            guard target.utf8.count <= limits.maxTargetBytes else {
                throw TokenGateError(.invalidRequest, "the request URL is longer than \(limits.maxTargetBytes) bytes")
            }
            if let authorization, authorization.utf8.count > limits.maxAuthorizationBytes {
                throw TokenGateError(.invalidRequest, "the Authorization header is longer than \(limits.maxAuthorizationBytes) bytes")
            }
            let (tokenType, parameters) = try resolve()
            return TokenQuery(
                providerID: providerID, tokenType: tokenType, parameters: parameters, authorization: authorization, peer: peer,
                requestID: requestID)
        } catch {
            // Refused before the service saw it; counted and logged with the service's own denials.
            service.recordDenial(error, providerID: providerID, tokenType: deniedType(), peer: peer, requestID: requestID)
            throw error
        }
    }

    /// A sample route's type as the token type it names for logs and metrics (`delivery_driver`: `delivery-driver`).
    static func tokenTypeName(ofSampleType sampleType: String?) -> String {
        String((sampleType ?? "").map { $0 == "_" ? "-" : $0 })
    }

    /// The `Authorization` value, as `headers[.authorization]` gives it. That subscript joins the values of every
    /// field with the name, building a new string even for the usual single one (a session token is ~800 bytes);
    /// a single field's value is returned as stored, and only several are joined, exactly as the subscript does.
    static func authorization(_ headers: HTTPFields) -> String? {
        var value: String?
        for field in headers where field.name == .authorization {
            guard value == nil else { return headers[.authorization] }
            value = field.value
        }
        return value
    }

    static func json(_ bytes: [UInt8], status: HTTPResponse.Status, cacheControl: String) -> Response {
        json(ByteBuffer(bytes: bytes), status: status, cacheControl: cacheControl)
    }

    static func json(_ buffer: ByteBuffer, status: HTTPResponse.Status, cacheControl: String) -> Response {
        Response(status: status, headers: jsonHeaders(cacheControl: cacheControl), body: .init(byteBuffer: buffer))
    }

    /// `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers), when the provider has limits. A
    /// token answer has them after its `Content-Length` (its route renders the JSON, ``serve(_:_:resolve:render:)``
    /// adds these); a refusal, before (they are among the error's own).
    static func appendRateLimits(_ limits: RateLimitHeaders?, to headers: inout some AnswerHeaders) {
        guard let limits else { return }
        headers.append(.rateLimitPolicy, limits.policy)
        if let status = limits.status { headers.append(.rateLimit, status) }
    }

    /// A JSON answer's first headers. One allocation with room for what follows (the rate limits', Content-Length,
    /// X-Request-ID, Date, Server): no regrowth.
    static func jsonHeaders<Headers: AnswerHeaders>(cacheControl: String, as _: Headers.Type = HTTPFields.self) -> Headers {
        var headers = Headers(reservingCapacity: 10)
        headers.append(jsonContentType)
        if cacheControl == "no-store" { headers.append(noStore) } else { headers.append(.cacheControl, cacheControl) }
        return headers
    }

    // Made once: a field checks its value when it is made, and every token answer and denial sends these two.
    private static let jsonContentType = HTTPField(name: .contentType, value: "application/json")
    private static let noStore = HTTPField(name: .cacheControl, value: "no-store")
}
