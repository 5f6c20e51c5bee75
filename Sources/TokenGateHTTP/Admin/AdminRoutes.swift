import HTTPTypes
import Hummingbird
import TokenGateCore

/// The operator's endpoints, on the admin listener only (loopback by default): `/metrics` (Prometheus text),
/// `/healthz`, `/readyz` (and `/readyz/providers/{id}`), `/openapi.json`, the lifecycle API (``ContextLifecycleRoutes``) and the push endpoint of Fleet Engine's
/// events (``FleetEventRoutes``). Metrics name every tenant, so the public listener never serves them.
struct AdminRoutes: Sendable {
    let service: TokenService
    let exporter: MetricsExporter

    static let table = RouteTable([
        .init(path: "/metrics", allow: "GET"),
        .init(path: "/healthz", allow: "GET"),
        .init(path: "/readyz", allow: "GET"),
        .init(path: providerReadinessPath, allow: "GET"),
        .init(path: "/openapi.json", allow: "GET"),
        .init(path: ContextLifecycleRoutes.path, allow: "POST, DELETE"),
        .init(path: ContextLifecycleRoutes.batchPath, allow: "POST"),
        .init(path: FleetEventRoutes.path, allow: "POST"),
    ])

    /// One provider's readiness, for an orchestrator or a check that follows one tenant.
    static let providerReadinessPath = "/readyz/providers/:providerId"

    static let openAPIBody = ByteBuffer(bytes: OpenAPIDocument.bytes)

    func register(on router: Router<TokenGateRequestContext>) {
        router.get("/metrics") { _, _ in
            var headers = HTTPFields()
            headers.append(HTTPField(name: .contentType, value: "text/plain; version=0.0.4; charset=utf-8"))
            headers.append(HTTPField(name: .cacheControl, value: "no-store"))
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: exporter.scrape(service))))
        }
        router.get("/healthz") { _, _ in
            TokenRoutes.json(TokenRoutes.healthBody, status: .ok, cacheControl: "no-store")
        }
        router.get("/readyz") { _, _ in
            TokenRoutes.readiness(of: service, detailed: true)
        }
        router.get(RouterPath(Self.providerReadinessPath)) { _, context in
            TokenRoutes.providerReadiness(of: service, providerID: context.parameters.get("providerId") ?? "")
        }
        router.get("/openapi.json") { _, _ in
            TokenRoutes.json(Self.openAPIBody, status: .ok, cacheControl: "no-cache")
        }
        ContextLifecycleRoutes(service: service).register(on: router)
        FleetEventRoutes(receiver: FleetEventReceiver(service: service), clock: service.clock).register(on: router)
    }
}
