import Hummingbird
import Logging

/// A peer server for tests (a tenant's authorizer, Google's key lists): `router` served by Hummingbird on 127.0.0.1
/// and an ephemeral port while `body` runs with its `http://127.0.0.1:PORT`, stopped afterwards whatever happens.
enum LoopbackHTTPServer {
    static func run<Result: Sendable>(
        _ router: Router<BasicRequestContext>, name: String, _ body: (String) async throws -> Result
    ) async throws -> Result {
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: name),
            onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? 0) },
            logger: Logger(label: name) { _ in SwiftLogNoOpLogHandler() }
        )
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await app.runService(gracefulShutdownSignals: []) }
            defer { group.cancelAll() }
            var port: Int?
            for await bound in ports {
                port = bound
                break
            }
            continuation.finish()
            guard let port, port > 0 else { throw CancellationError() }
            return try await body("http://127.0.0.1:\(port)")
        }
    }
}
