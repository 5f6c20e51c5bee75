extension RESPClient {
    /// Opens a connection to the server: the configured one, or, with Sentinels, the primary they name now,
    /// confirmed with `ROLE` (a Sentinel may still name a primary that was just demoted, or one that is down).
    func openConnection(pushes: AsyncStream<RESPValue>.Continuation? = nil) async throws -> RESPConnection {
        guard let sentinel = configuration.sentinel else {
            return try await RESPConnection.connect(
                configuration: configuration, tlsContext: tlsContext, eventLoopGroup: eventLoopGroup, pushes: pushes)
        }
        var target = configuration
        (target.host, target.port) = try await primaryAddress(sentinel)
        let connection = try await RESPConnection.connect(
            configuration: target, tlsContext: tlsContext, eventLoopGroup: eventLoopGroup, pushes: pushes)
        do {
            let role = try await connection.send(RESPCommand(["ROLE"]))
            guard role.elements?.first?.string == "master" else {
                throw RESPError.unavailable(
                    reason: "the Sentinels name \(target.host):\(target.port) as the primary of \(sentinel.primaryName), but it is not (yet) one")
            }
        } catch {
            await connection.close()
            throw error
        }
        return connection
    }

    /// The primary's address, from the first Sentinel that answers (`SENTINEL GET-MASTER-ADDR-BY-NAME`).
    private func primaryAddress(_ sentinel: RESPConfiguration.Sentinel) async throws -> (host: String, port: Int) {
        var failures: [String] = []
        for address in sentinel.addresses {
            var asking = RESPConfiguration(host: address.host, port: address.port)
            asking.username = sentinel.username
            asking.password = sentinel.password
            asking.tls = configuration.tls
            asking.connectTimeout = configuration.connectTimeout
            asking.commandTimeout = configuration.commandTimeout
            do {
                let connection = try await RESPConnection.connect(configuration: asking, tlsContext: tlsContext, eventLoopGroup: eventLoopGroup)
                let reply: RESPValue
                do {
                    reply = try await connection.send(RESPCommand(["SENTINEL", "GET-MASTER-ADDR-BY-NAME", sentinel.primaryName]))
                } catch {
                    await connection.close()
                    throw error
                }
                await connection.close()
                guard let pair = reply.elements, pair.count == 2, let host = pair[0].string, let port = pair[1].string.flatMap({ Int($0) }) else {
                    failures.append("\(address): knows no primary named \(sentinel.primaryName)")
                    continue
                }
                return (host, port)
            } catch {
                failures.append("\(address): \(error)")
            }
        }
        throw RESPError.unavailable(reason: "no Sentinel named the primary: " + failures.joined(separator: "; "))
    }
}
