import ArgumentParser
import AsyncHTTPClient
import FileTokenSource
import Foundation
import GoogleIAMSigner
import Logging
import OutboundHTTP
import StaticKeySigner
import TokenGateCore
import TokenGateHTTP
import TokenGateOutbound
import UpstreamTokenServer

/// `--config FILE`, shared by the subcommands that read `config.yaml`.
struct ConfigurationOptions: ParsableArguments {
    @Option(name: .long, help: "The configuration file.")
    var config: String = "config.yaml"

    /// Runs `body` with an assembler for this build's plugins. Its one HTTP client (upstream token servers, JWKS
    /// URLs, clients' authorizers and Fleet Engine's acceptance checks alike: no redirects, no silent connection retries) lives as long as `body` and
    /// is shut down after.
    func withAssembler<Result>(
        logger: Logger, metrics: GatewayMetrics = GatewayMetrics(), _ body: (GatewayAssembler) async throws -> Result
    ) async throws -> Result {
        let client = HTTPClient(
            eventLoopGroup: HTTPClient.defaultEventLoopGroup,
            configuration: OutboundExchange.clientConfiguration()
        )
        let assembler = GatewayAssembler(
            registry: BackendRegistry([
                StaticKeySignerFactory(), UpstreamTokenServerFactory(httpClient: client), FileTokenSourceFactory(),
                GoogleIAMSignerFactory(httpClient: client),
            ]),
            environment: ProcessInfo.processInfo.environment,
            logger: logger,
            jwksFetcher: HTTPJWKSFetcher(client: client),
            authorizerTransport: HTTPAuthorizerTransport(client: client),
            fleetEngineTransport: HTTPFleetEngineTransport(client: client),
            metrics: metrics
        )
        do {
            let result = try await body(assembler)
            try await client.shutdown()
            return result
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    /// Assembles the configuration (only `provider` when given); a problem becomes exit status 2.
    func assemble(_ assembler: GatewayAssembler, only provider: String? = nil) async throws(CLIFailure) -> GatewayGeneration {
        var only: ProviderID?
        if let provider {
            guard let id = ProviderID(provider) else { throw CLIFailure(.usage, "\(config): '\(provider)' is not a provider ID") }
            only = id
        }
        do {
            return try await assembler.build(path: config, only: only)
        } catch {
            throw .usage(error)
        }
    }

    /// A logger for commands that only report problems.
    static func logger(level: Logger.Level = .warning) -> Logger {
        var logger = Logger(label: "tokengate")
        logger.logLevel = level
        return logger
    }
}
