import AsyncHTTPClient
import NIOHTTP1
import Foundation
public import Logging
import NIOCore
import ServiceLifecycle
public import TokenGateCore
import TokenGateHTTP

/// A real TokenGate HTTP server on 127.0.0.1 and an ephemeral port, for the duration of a test.
public struct RunningGateway: Sendable {
    /// `http://127.0.0.1:PORT`
    public let baseURL: String
    /// The port it listens on, for raw TCP clients.
    public let port: Int
    /// The service behind it, for assertions on its state.
    public let service: TokenService
    /// The reloader that runs its generations, as under `serve`.
    public let reloader: GatewayReloader

    /// Assembles `configuration` (a path to config.yaml), starts the gateway on port 0, runs `body`, and shuts it
    /// down.
    ///
    /// Background work runs as under `serve`, through a ``GatewayReloader``: each key set's refresher (fetching
    /// through `jwksFetcher`, by default AsyncHTTPClient for loopback servers) and each backend's own work.
    public static func with<Result: Sendable>(
        configuration path: String,
        registry: BackendRegistry,
        clock: TokenGateClock,
        environment: [String: String] = [:],
        logger: Logger = Logger(label: "tokengate-test", factory: { _ in SwiftLogNoOpLogHandler() }),
        jwksFetcher: (any JWKSFetcher)? = nil,
        watchInterval: Duration? = nil,
        _ body: (RunningGateway) async throws -> Result
    ) async throws -> Result {
        let assembler = GatewayAssembler(
            registry: registry, environment: environment, clock: clock, logger: logger,
            jwksFetcher: jwksFetcher ?? HTTPJWKSFetcher(client: HTTPClient.shared))
        let generation = try await assembler.build(path: path)
        let service = TokenService(generation: generation, clock: clock, logger: logger)
        var server = generation.configuration.server
        server.host = "127.0.0.1"
        server.port = 0
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let application = GatewayApplication.make(service: service, server: server, clock: clock, logger: logger) { port in
            portContinuation.yield(port)
            portContinuation.finish()
        }
        let reloader = GatewayReloader(
            service: service, assembler: assembler, configurationPath: path, watchInterval: watchInterval, logger: logger)
        let group = ServiceGroup(configuration: .init(services: [application, reloader], logger: logger))
        return try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            defer { tasks.cancelAll() }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else { throw CancellationError() }
            let gateway = RunningGateway(baseURL: "http://127.0.0.1:\(port)", port: port, service: service, reloader: reloader)
            do {
                let result = try await body(gateway)
                await group.triggerGracefulShutdown()
                return result
            } catch {
                await group.triggerGracefulShutdown()
                throw error
            }
        }
    }

    /// GETs `path` (with query) with an optional bearer credential; returns status, headers and body.
    public func get(_ path: String, bearer: String? = nil, headers: [(String, String)] = []) async throws -> GatewayResponse {
        try await request("GET", path, bearer: bearer, headers: headers)
    }

    /// Sends `method` to `path` (with query) with an optional bearer credential; returns status, headers and body.
    public func request(_ method: String, _ path: String, bearer: String? = nil, headers: [(String, String)] = []) async throws
        -> GatewayResponse
    {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = HTTPMethod(rawValue: method)
        if let bearer { request.headers.add(name: "Authorization", value: "Bearer \(bearer)") }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        return GatewayResponse(status: Int(response.status.code), headers: response.headers.map { ($0.name, $0.value) }, body: Array(buffer: body))
    }
}

/// What the gateway answered.
public struct GatewayResponse: Sendable {
    /// The HTTP status code.
    public let status: Int
    /// The response headers.
    public let headers: [(String, String)]
    /// The body bytes.
    public let body: [UInt8]

    /// The first header named `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    /// The body as text.
    public var text: String { String(decoding: body, as: UTF8.self) }
}
