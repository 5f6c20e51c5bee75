import ArgumentParser
import Foundation
import JOSE
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import TokenGateCore
import TokenGateHTTP
import UnixSignals

/// `tokengate serve`: the gateway.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve Fleet Engine tokens over HTTP for every provider in the configuration.",
        discussion: """
            SIGHUP (or `tokengate reload`) reloads the configuration: the next generation is built beside the \
            running one and swapped in whole only if everything in it built. SIGTERM and SIGINT shut down \
            gracefully.
            """
    )

    @OptionGroup var configuration: ConfigurationOptions
    @Option(name: .long, help: "Listen on this address instead of server.host.")
    var host: String?
    @Option(name: .long, help: "Listen on this port instead of server.port (0: any free port).")
    var port: Int?
    @Option(name: .long, help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "info"
    @Option(name: .long, help: "Write the process ID here (for `tokengate reload`); removed on exit.")
    var pidFile: String?
    @Option(name: .long, help: "Also reload when config.yaml or a file it names changes; look this often (e.g. 5s).")
    var watch: String?

    func run() async throws {
        guard let level = Logger.Level(rawValue: logLevel) else { throw CLIFailure(.usage, "unknown --log-level '\(logLevel)'") }
        var watchInterval: Duration?
        if let watch {
            guard let interval = ConfigDuration.parse(watch), interval >= .milliseconds(100) else {
                throw CLIFailure(.usage, "--watch takes a duration of at least 100ms, such as 5s")
            }
            watchInterval = interval
        }
        var logger = Logger(label: "tokengate")
        logger.logLevel = level
        try await configuration.withAssembler(logger: logger) { assembler in
            let generation = try await configuration.assemble(assembler)
            var server = generation.configuration.server
            if let host { server.host = host }
            if let port {
                guard (0...65535).contains(port) else { throw CLIFailure(.usage, "--port must be 0 to 65535") }
                server.port = port
            }
            logProviders(generation, logger: logger)
            let service = TokenService(generation: generation, logger: logger)
            let host = server.host
            let listening = ListeningFlag()
            let application = GatewayApplication.make(service: service, server: server, logger: logger) { port in
                listening.set()
                // One line on standard output, for scripts and tests that started us on port 0.
                FileHandle.standardOutput.write(Data("tokengate listening on http://\(host):\(port)\n".utf8))
            }
            // The reloader runs each generation's background work (JWKS refreshers, file watchers) and swaps
            // generations on SIGHUP. A JWKS URL is fetched for the first time now, not before: until then, tokens
            // its keys verify are refused, while every other provider and client is served from the start.
            let reloader = GatewayReloader(
                service: service, assembler: assembler, configurationPath: configuration.config,
                watchInterval: watchInterval, logger: logger)
            let group = ServiceGroup(
                configuration: .init(
                    services: [application, reloader],
                    gracefulShutdownSignals: [.sigterm, .sigint],
                    logger: logger
                )
            )
            try writePIDFile()
            defer { if let pidFile { try? FileManager.default.removeItem(atPath: pidFile) } }
            do {
                try await group.run()
            } catch {
                // Before the listener is up, a socket error is the address (busy, not ours, not allowed): a
                // configuration error, said in one line rather than as NIO's error.
                guard !listening.isSet, let failure = Self.listenFailure(error, host: server.host, port: server.port) else { throw error }
                throw failure
            }
        }
    }

    /// `cannot listen on HOST:PORT: REASON`, when `error` is why the server could not bind.
    static func listenFailure(_ error: any Error, host: String, port: Int) -> CLIFailure? {
        let reason: String
        switch error {
        case let error as IOError:
            switch error.errnoCode {
            case EADDRINUSE: reason = "address already in use"
            case EADDRNOTAVAIL: reason = "address not available on this host"
            case EACCES: reason = "permission denied"
            default:
                let text = String(cString: strerror(error.errnoCode))
                reason = text.prefix(1).lowercased() + text.dropFirst()
            }
        case is SocketAddressError:
            reason = "no such host or address"
        default:
            return nil
        }
        let address = host.contains(":") ? "[\(host)]" : host
        return CLIFailure(.usage, "cannot listen on \(address):\(port): \(reason)")
    }

    private func writePIDFile() throws(CLIFailure) {
        guard let pidFile else { return }
        guard FileManager.default.createFile(atPath: pidFile, contents: Data("\(getpid())\n".utf8)) else {
            throw CLIFailure(.usage, "cannot write the pid file \(pidFile)")
        }
    }

    /// One line per provider at start, the configuration's warnings, and a loud warning for the published demo key.
    private func logProviders(_ generation: GatewayGeneration, logger: Logger) {
        for warning in generation.warnings { logger.warning("configuration: \(warning)") }
        let demoDigest = try? Digest.sha256(Array(Self.demoAPIKey.utf8))
        for (id, runtime) in generation.providers.sorted(by: { $0.key < $1.key }) {
            let settings = runtime.settings
            logger.info(
                "provider loaded",
                metadata: [
                    "provider": "\(id)", "backend": "\(settings.backendType)",
                    "token_types": "\(runtime.backend.tokenTypes.sorted().map(\.rawValue).joined(separator: ","))",
                    "clients": "\(settings.clients.count)",
                ])
            for client in settings.clients {
                if case .apiKey(let digest) = client.credential, digest == demoDigest {
                    logger.warning(
                        "DEMO CONFIGURATION: client '\(client.name)' of provider \(id) accepts the published demo API key '\(Self.demoAPIKey)'. Never use it in production."
                    )
                }
            }
        }
    }

    /// The demo API key of the bundled config.yaml, published in the README.
    static let demoAPIKey = "tg_demo_not_a_secret"
}

/// Whether the server has started listening; set once, from the server's start callback.
private final class ListeningFlag: Sendable {
    private let value = Mutex(false)

    var isSet: Bool { value.withLock { $0 } }

    func set() { value.withLock { $0 = true } }
}
