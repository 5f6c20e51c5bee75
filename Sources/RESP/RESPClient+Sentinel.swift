import Logging
import NIOCore

extension RESPClient {
    /// Opens a connection to the server: the configured one, or, with Sentinels, the primary they name now,
    /// confirmed with `ROLE` (a Sentinel may still name a primary that was just demoted, or one that is down).
    /// `eventLoop` is the loop it runs on (nil: the next of the group).
    func openConnection(
        on eventLoop: (any EventLoop)? = nil, pushes: AsyncStream<RESPValue>.Continuation? = nil
    ) async throws -> RESPConnection {
        let eventLoop = eventLoop ?? eventLoopGroup.next()
        guard let sentinel = configuration.sentinel else {
            return try await RESPConnection.connect(
                configuration: configuration, tlsContext: tlsContext, eventLoopGroup: eventLoop, pushes: pushes)
        }
        startWatchingSentinels()
        var target = configuration
        (target.host, target.port) = try await primaryAddress(sentinel)
        let connection = try await RESPConnection.connect(
            configuration: target, tlsContext: tlsContext, eventLoopGroup: eventLoop, pushes: pushes)
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
            do {
                let connection = try await connectToSentinel(at: address)
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

    private func connectToSentinel(
        at address: RESPConfiguration.Sentinel.Address, pushes: AsyncStream<RESPValue>.Continuation? = nil
    ) async throws -> RESPConnection {
        guard let sentinel = configuration.sentinel else { throw RESPError.unavailable(reason: "no Sentinels configured") }
        var asking = RESPConfiguration(host: address.host, port: address.port)
        asking.username = sentinel.username
        asking.password = sentinel.password
        asking.tls = configuration.tls
        asking.connectTimeout = configuration.connectTimeout
        asking.commandTimeout = configuration.commandTimeout
        return try await RESPConnection.connect(configuration: asking, tlsContext: tlsContext, eventLoopGroup: eventLoopGroup, pushes: pushes)
    }

    /// Listens, once per client and until ``shutdown()``, for the Sentinels' `+switch-master` announcements.
    private func startWatchingSentinels() {
        guard let sentinel = configuration.sentinel else { return }
        startSentinelWatch { await self.watchSentinels(sentinel) }
    }

    /// Subscribes to `+switch-master` on one Sentinel after another (the next after each drop, after a backoff):
    /// when the primary moves, the client's connections to the old one are closed and its backoffs cleared, so the
    /// next command connects to the new primary at once, instead of after a `READONLY` reply (a demoted primary) or a
    /// backoff (a dead one).
    private func watchSentinels(_ sentinel: RESPConfiguration.Sentinel) async {
        var failures = 0
        var next = 0
        while !Task.isCancelled, !isShutdown {
            let address = sentinel.addresses[next % sentinel.addresses.count]
            next += 1
            do {
                try await subscribeOnce(
                    channels: ["+switch-master"], open: { try await self.connectToSentinel(at: address, pushes: $0) },
                    deliver: { message in
                        // `<name> <old ip> <old port> <new ip> <new port>`
                        let fields = String(buffer: message.payload).split(separator: " ")
                        guard fields.count == 5, fields[0] == sentinel.primaryName else { return }
                        self.logger.notice(
                            "the Sentinels switched the Redis primary",
                            metadata: ["primary": "\(sentinel.primaryName)", "from": "\(fields[1]):\(fields[2])", "to": "\(fields[3]):\(fields[4])"])
                        self.forgetServer()
                    },
                    onSubscribed: { failures = 0 })
            } catch {
                failures += 1
                logger.debug("Sentinel subscription failed", metadata: ["sentinel": "\(address)", "error": "\(error)"])
            }
            guard !Task.isCancelled, !isShutdown else { return }
            // The data connections' backoff, but never past a few seconds: a client whose subscription failed once
            // (a timeout on a loaded machine) must not stay deaf to failovers for a long backoff's minutes.
            let delay = min(configuration.reconnectBackoff.delay(afterFailures: max(failures, 1)), Self.sentinelWatchMaximumDelay)
            do { try await Task.sleep(for: delay) } catch { return }
        }
    }

    /// The longest wait before the `+switch-master` subscription is tried again.
    static let sentinelWatchMaximumDelay: Duration = .seconds(5)
}
