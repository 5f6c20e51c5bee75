public import Hummingbird
import JOSE
public import TokenGateCore

/// The token API: `GET /v1/providers/{providerId}/tokens/{tokenType}`, the providers' JWKS and health checks.
public struct TokenRoutes: Sendable {
    let service: TokenService
    let limits: RequestLimits
    let clock: TokenGateClock
    let metrics: GatewayMetrics

    /// Creates the routes over a token service.
    public init(service: TokenService, limits: RequestLimits = RequestLimits(), clock: TokenGateClock = .system) {
        self.service = service
        self.limits = limits
        self.clock = clock
        self.metrics = GatewayMetrics()
    }

    /// Adds the routes to `router`.
    public func register(on router: Router<TokenGateRequestContext>) {
        router.get("/v1/providers/:providerId/tokens/:tokenType") { request, context in
            try await self.token(request, context)
        }
        router.get("/v1/providers/:providerId/jwks.json") { _, context in
            let bytes = try self.service.publicKeys(providerID: context.parameters.get("providerId") ?? "")
            return Self.json(bytes, status: .ok, cacheControl: "public, max-age=300")
        }
        router.get("/healthz") { _, _ in
            Self.json(Array(#"{"status":"ok"}"#.utf8), status: .ok, cacheControl: "no-store")
        }
        router.get("/readyz") { _, _ in
            // Built only from a configuration whose every provider assembled: serving means ready.
            let generation = self.service.generation
            let body = JSON.serialize(
                .object(
                    JSONObject([
                        "status": .string("ready"),
                        "providers": .integer(Int64(generation.providers.count)),
                        "generation": .integer(Int64(generation.number)),
                        "configSha256": .string(generation.configurationDigest),
                    ])
                )
            )
            return Self.json(body, status: .ok, cacheControl: "no-store")
        }
    }

    private func token(_ request: Request, _ context: TokenGateRequestContext) async throws -> Response {
        do {
            let query = try parse(request, context)
            let grant = try await service.token(for: query)
            metrics.record(grant.outcome)
            return Self.json(TokenResponse.body(for: grant, now: clock.wallSeconds()), status: .ok, cacheControl: "no-store")
        } catch {
            metrics.record(error.code)
            throw error
        }
    }

    /// Turns the request into a `TokenQuery`, refusing oversized or repeated parts before anything else runs.
    private func parse(_ request: Request, _ context: TokenGateRequestContext) throws(TokenGateError) -> TokenQuery {
        guard request.uri.string.utf8.count <= limits.maxTargetBytes else {
            throw TokenGateError(.invalidRequest, "the request URL is longer than \(limits.maxTargetBytes) bytes")
        }
        let authorization = Self.authorization(request.headers)
        if let authorization, authorization.utf8.count > limits.maxAuthorizationBytes {
            throw TokenGateError(.invalidRequest, "the Authorization header is longer than \(limits.maxAuthorizationBytes) bytes")
        }
        let parameters = try QueryParameters.parse(request.uri.query, limits: limits)
        return TokenQuery(
            providerID: context.parameters.get("providerId") ?? "",
            tokenType: context.parameters.get("tokenType") ?? "",
            parameters: parameters,
            authorization: authorization,
            peer: context.peer
        )
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
        Response(
            status: status,
            headers: [.contentType: "application/json", .cacheControl: cacheControl],
            body: .init(byteBuffer: buffer)
        )
    }
}
