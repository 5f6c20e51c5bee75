import ArgumentParser
import Foundation
import JOSE
import Logging
import ServiceLifecycle
import TokenGateCore
import TokenGateHTTP
import UnixSignals

/// `tokengate serve`: the gateway.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve Fleet Engine tokens over HTTP for every provider in the configuration."
    )

    @OptionGroup var configuration: ConfigurationOptions
    @Option(name: .long, help: "Listen on this address instead of server.host.")
    var host: String?
    @Option(name: .long, help: "Listen on this port instead of server.port (0: any free port).")
    var port: Int?
    @Option(name: .long, help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "info"

    func run() async throws {
        guard let level = Logger.Level(rawValue: logLevel) else { throw CLIFailure(.usage, "unknown --log-level '\(logLevel)'") }
        var logger = Logger(label: "tokengate")
        logger.logLevel = level
        let loaded = try await configuration.load(logLevel: level)
        var server = loaded.configuration.server
        if let host { server.host = host }
        if let port {
            guard (0...65535).contains(port) else { throw CLIFailure(.usage, "--port must be 0 to 65535") }
            server.port = port
        }
        warnAboutDemoCredentials(loaded, logger: logger)
        let service = TokenService(configuration: loaded, logger: logger)
        let host = server.host
        let application = GatewayApplication.make(service: service, server: server, logger: logger) { port in
            // One line on standard output, for scripts and tests that started us on port 0.
            FileHandle.standardOutput.write(Data("tokengate listening on http://\(host):\(port)\n".utf8))
        }
        // Backends with background work (file watchers, key refreshers) run beside the server.
        let backgroundWork = loaded.providers.values.compactMap { $0.backend as? any Service }
        let group = ServiceGroup(
            configuration: .init(
                services: [application] + backgroundWork,
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        try await group.run()
    }

    /// The bundled demo configuration accepts a published API key: say so loudly, every start.
    private func warnAboutDemoCredentials(_ loaded: LoadedConfiguration, logger: Logger) {
        guard let demoDigest = try? Digest.sha256(Array(Self.demoAPIKey.utf8)) else { return }
        for (id, provider) in loaded.providers {
            for client in provider.settings.clients {
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
