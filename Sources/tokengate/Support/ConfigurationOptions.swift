import ArgumentParser
import Foundation
import Logging
import FileTokenSource
import StaticKeySigner
import TokenGateCore

/// The plugins compiled into this build, by `backend.type`.
let backendRegistry = BackendRegistry([StaticKeySignerFactory(), FileTokenSourceFactory()])

/// `--config FILE`, shared by the subcommands that read `config.yaml`.
struct ConfigurationOptions: ParsableArguments {
    @Option(name: .long, help: "The configuration file.")
    var config: String = "config.yaml"

    /// Loads and validates the configuration and builds every backend; a problem becomes exit status 2.
    func load(logLevel: Logger.Level = .warning) async throws(CLIFailure) -> LoadedConfiguration {
        var logger = Logger(label: "tokengate")
        logger.logLevel = logLevel
        let loader = ConfigurationLoader(
            registry: backendRegistry,
            environment: ProcessInfo.processInfo.environment,
            clock: .system,
            logger: logger
        )
        do {
            return try await loader.load(path: config)
        } catch {
            throw .usage(error)
        }
    }
}

extension LoadedConfiguration {
    /// The provider named on the command line, or exit status 2 listing the ones that exist.
    func provider(_ rawID: String, file: String) throws(CLIFailure) -> Provider {
        guard let id = ProviderID(rawID), let provider = providers[id] else {
            let known = providers.keys.sorted().map(\.rawValue).joined(separator: ", ")
            throw CLIFailure(.usage, "\(file): no provider '\(rawID)'; it declares: \(known)")
        }
        return provider
    }
}
