import AsyncHTTPClient
import Foundation
package import JOSE
package import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle
package import TokenGateCore
package import TokenGateHTTP
import TokenGateOutbound
import TokenGateRedis

/// A real TokenGate HTTP server on 127.0.0.1 and an ephemeral port, for the duration of a test.
package struct RunningGateway: Sendable {
    /// `http://127.0.0.1:PORT`
    package let baseURL: String
    /// The port it listens on, for raw TCP clients.
    package let port: Int
    /// The service behind it, for assertions on its state.
    package let service: TokenService
    /// The reloader that runs its generations, as under `serve`.
    package let reloader: GatewayReloader
    /// `http://127.0.0.1:PORT` of the admin listener (`/metrics`, `/healthz`, `/readyz`).
    package let adminURL: String
    /// This gateway's own metrics registry (not the process-wide one).
    package let exporter: MetricsExporter

    /// Assembles `configuration` (a path to config.yaml), starts the gateway on port 0, runs `body`, and shuts it
    /// down.
    ///
    /// Background work runs as under `serve`, through a ``GatewayReloader``: each key set's refresher (fetching
    /// through `jwksFetcher`, by default AsyncHTTPClient for loopback servers) and each backend's own work. Clients'
    /// authorizers are asked through `authorizerTransport`, and acceptance checks call Fleet Engine through
    /// `fleetEngineTransport`, by default AsyncHTTPClient (the shared client; a redirected answer is refused).
    package static func with<Result: Sendable>(
        configuration path: String,
        registry: BackendRegistry,
        clock: TokenGateClock,
        environment: [String: String] = [:],
        logger: Logger = Logger(label: "tokengate-test", factory: { _ in SwiftLogNoOpLogHandler() }),
        jwksFetcher: (any JWKSFetcher)? = nil,
        authorizerTransport: (any AuthorizerTransport)? = nil,
        fleetEngineTransport: (any FleetEngineTransport)? = nil,
        watchInterval: Duration? = nil,
        _ body: (RunningGateway) async throws -> Result
    ) async throws -> Result {
        let exporter = MetricsExporter()
        // As under `serve`: each tenant's lines from its share of the log.
        let logger = TenantLogBudget(clock: clock).wrap(logger)
        let assembler = GatewayAssembler(
            registry: registry, environment: environment, clock: clock, logger: logger,
            jwksFetcher: jwksFetcher ?? HTTPJWKSFetcher(client: HTTPClient.shared),
            authorizerTransport: authorizerTransport ?? HTTPAuthorizerTransport(client: HTTPClient.shared),
            fleetEngineTransport: fleetEngineTransport ?? HTTPFleetEngineTransport(client: HTTPClient.shared),
            metrics: GatewayMetrics(factory: exporter.factory))
        let generation = try await assembler.build(path: path)
        let audit = try AuditLog(generation.configuration.audit, logger: logger)
        // A `sharedState:` section connects to its Redis as under `serve`, and replicates ended contexts.
        let sharedState = try generation.configuration.sharedState.map {
            try SharedState.redis($0, metrics: assembler.metrics, clock: clock, logger: logger)
        }
        // A request waits for the JWKS refetch an unknown kid asks for: three seconds in production, and here as long as
        // a loaded test run (the whole suite on two cores) may take to schedule the refresher.
        let service = TokenService(
            generation: generation, audit: audit, sharedState: sharedState, clock: clock, unknownKeyWait: .seconds(30), logger: logger)
        var server = generation.configuration.server
        server.host = "127.0.0.1"
        server.port = 0
        // `scripts/test` runs the HTTP suites a second time with every request through the router.
        if ProcessInfo.processInfo.environment["TOKENGATE_TEST_FAST_PATH"] == "off" { server.fastPath = false }
        let (ports, portContinuation) = AsyncStream.makeStream(of: (listener: String, port: Int).self)
        let application = try GatewayApplication.make(service: service, server: server, clock: clock, logger: logger) { port in
            portContinuation.yield(("public", port))
        }
        var adminListener = generation.configuration.server.admin ?? AdminListener()
        (adminListener.host, adminListener.port) = ("127.0.0.1", 0)
        let admin = GatewayApplication.makeAdmin(
            service: service, exporter: exporter, admin: adminListener, idleTimeout: server.idleTimeout, readTimeout: server.readTimeout,
            logger: logger
        ) { port in
            portContinuation.yield(("admin", port))
        }
        let reloader = GatewayReloader(
            service: service, assembler: assembler, configurationPath: path, watchInterval: watchInterval, logger: logger)
        var services: [any Service] = [application, admin, reloader]
        if let sharedState { services.append(EndedContextsReplication(service: service, sharedState: sharedState)) }
        let group = ServiceGroup(configuration: .init(services: services, logger: logger))
        return try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            defer { tasks.cancelAll() }
            var listening: [String: Int] = [:]
            for await (listener, port) in ports {
                listening[listener] = port
                if listening.count == 2 { break }
            }
            portContinuation.finish()
            guard let port = listening["public"], let adminPort = listening["admin"] else { throw CancellationError() }
            let scheme = server.tls == nil ? "http" : "https"
            let gateway = RunningGateway(
                baseURL: "\(scheme)://127.0.0.1:\(port)", port: port, service: service, reloader: reloader,
                adminURL: "http://127.0.0.1:\(adminPort)", exporter: exporter)
            // Shut down as `serve` does, gracefully, and give that a moment to finish before the deferred cancel: a
            // cancel that catches the listener with a connection accepted but not yet handed on drops its channel
            // unfinished, which NIO's debug build traps (a crash seen once under the whole suite).
            func shutDown() async {
                await group.triggerGracefulShutdown()
                await sharedState?.shutdown()
                tasks.addTask { try await Task.sleep(for: .seconds(2)) }
                _ = try? await tasks.next()
            }
            do {
                let result = try await body(gateway)
                await shutDown()
                return result
            } catch {
                await shutDown()
                throw error
            }
        }
    }

    /// The admin listener's `/metrics` text.
    package func metrics() async throws -> String {
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: adminURL + "/metrics"), timeout: .seconds(30))
        return String(buffer: try await response.body.collect(upTo: 4 << 20))
    }

    /// GETs `path` (with query) with an optional bearer credential; returns status, headers and body.
    package func get(_ path: String, bearer: String? = nil, headers: [(String, String)] = []) async throws -> GatewayResponse {
        try await Endpoint(baseURL: baseURL).get(path, bearer: bearer, headers: headers)
    }

    /// Sends `method` to `path` (with query) with an optional bearer credential; returns status, headers and body.
    package func request(_ method: String, _ path: String, bearer: String? = nil, headers: [(String, String)] = []) async throws
        -> GatewayResponse
    {
        try await Endpoint(baseURL: baseURL).request(method, path, bearer: bearer, headers: headers)
    }

    /// One listener of the gateway, for plain HTTP requests.
    package struct Endpoint: Sendable {
        /// `http://127.0.0.1:PORT`
        package let baseURL: String

        /// The listener at `baseURL`.
        package init(baseURL: String) { self.baseURL = baseURL }

        /// GETs `path` (with query) with an optional bearer credential; returns status, headers and body.
        package func get(_ path: String, bearer: String? = nil, headers: [(String, String)] = []) async throws -> GatewayResponse {
            try await request("GET", path, bearer: bearer, headers: headers)
        }

        /// Sends `method` to `path` (with query) with an optional bearer credential and body; returns status, headers
        /// and body.
        package func request(
            _ method: String, _ path: String, bearer: String? = nil, headers: [(String, String)] = [], body: [UInt8]? = nil
        ) async throws -> GatewayResponse {
            var request = HTTPClientRequest(url: baseURL + path)
            request.method = HTTPMethod(rawValue: method)
            if let bearer { request.headers.add(name: "Authorization", value: "Bearer \(bearer)") }
            for (name, value) in headers { request.headers.add(name: name, value: value) }
            if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
            let body = try await response.body.collect(upTo: 1 << 20)
            return GatewayResponse(
                status: Int(response.status.code), headers: response.headers.map { ($0.name, $0.value) }, body: Array(buffer: body))
        }
    }
}

extension GatewayResponse {
    /// The body as a JSON object (empty if it is not one).
    package var json: JSONObject {
        if case .object(let object)? = try? JSON.parse(body) { return object }
        return JSONObject()
    }

    /// `error.code` of an error body.
    package var errorCode: String? {
        guard case .object(let error)? = json["error"] else { return nil }
        return error["code"]?.stringValue
    }
}

/// What the gateway answered.
package struct GatewayResponse: Sendable {
    /// The HTTP status code.
    package let status: Int
    /// The response headers.
    package let headers: [(String, String)]
    /// The body bytes.
    package let body: [UInt8]

    /// The first header named `name` (case-insensitive).
    package func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    /// The body as text.
    package var text: String { String(decoding: body, as: UTF8.self) }
}
