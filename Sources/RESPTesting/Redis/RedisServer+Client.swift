import Logging
import NIOCore
package import RESP

/// A RESP client of a test's Redis, for tests of the client itself and for writing what no replica would.
extension RedisServer {
    /// A configuration for this server (TLS with the test CA when it serves TLS), adjusted by `configure`.
    package func configuration(_ configure: (inout RESPConfiguration) -> Void = { _ in }) -> RESPConfiguration {
        var configuration = RESPConfiguration(host: "127.0.0.1", port: port)
        if let tls = options.tls {
            configuration.tls = .init(trustRoots: .certificateFile(tls.caCertificate), serverName: "localhost")
        }
        configuration.reconnectBackoff = .init(initial: .milliseconds(20), maximum: .milliseconds(200))
        configure(&configuration)
        return configuration
    }

    /// Runs `body` with a client for this server and shuts the client down afterwards, whatever happens.
    @discardableResult
    package func withClient<Result: Sendable>(
        _ configure: (inout RESPConfiguration) -> Void = { _ in }, _ body: (RESPClient) async throws -> Result
    ) async throws -> Result {
        let client = try RESPClient(
            configuration: configuration(configure), logger: Logger(label: "resp-test", factory: { _ in SwiftLogNoOpLogHandler() }))
        do {
            let result = try await body(client)
            await client.shutdown()
            return result
        } catch {
            await client.shutdown()
            throw error
        }
    }

    /// The number of client connections the server has, found with `CLIENT LIST` (which counts the asking one).
    package static func clientCount(_ client: some RESPCommandSending) async throws -> Int {
        let list = try await client.send(["CLIENT", "LIST"]).string ?? ""
        return list.split(separator: "\n").count
    }
}
