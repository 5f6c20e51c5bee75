/// Runs a server the tests start on a free loopback port: a port found free may be taken before the server binds
/// it, so `start` is tried on a few; the server is stopped after `body`, whatever happens.
package enum LoopbackServer {
    package static func with<Server, Result>(
        _ name: String, start: (_ port: Int) async throws -> Server, stop: (Server) async -> Void, _ body: (Server) async throws -> Result
    ) async throws -> Result {
        var lastError: (any Error)?
        for _ in 0..<5 {
            let server: Server
            do {
                server = try await start(try RedisServer.freeLoopbackPort())
            } catch {
                lastError = error
                continue
            }
            do {
                let result = try await body(server)
                await stop(server)
                return result
            } catch {
                await stop(server)
                throw error
            }
        }
        throw lastError ?? HarnessError("\(name) did not start")
    }
}
