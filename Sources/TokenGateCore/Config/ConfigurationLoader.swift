import Foundation
public import Logging

/// A provider ready to serve: its settings and its built backend.
public struct Provider: Sendable {
    /// The validated settings.
    public let settings: ProviderSettings
    /// The backend its plugin built.
    public let backend: any TokenBackend

    /// The provider ID.
    public var id: ProviderID { settings.id }

    /// Creates a provider.
    public init(settings: ProviderSettings, backend: any TokenBackend) {
        self.settings = settings
        self.backend = backend
    }
}

/// A configuration with every backend built: what `serve`, `check-config` and `verify-token` work from.
public struct LoadedConfiguration: Sendable {
    /// The validated configuration.
    public let configuration: GatewayConfiguration
    /// Every provider with its backend.
    public let providers: [ProviderID: Provider]
}

/// Reads `config.yaml`, validates it and builds every provider's backend through the plugin registry.
/// Nothing is half-applied: either every provider builds, or the first error is thrown.
public struct ConfigurationLoader: Sendable {
    /// The plugins.
    public let registry: BackendRegistry
    /// Where `${NAME}` values come from.
    public let environment: [String: String]
    /// Time for backends.
    public let clock: TokenGateClock
    /// Where backends log.
    public let logger: Logger

    /// Creates a loader.
    public init(
        registry: BackendRegistry,
        environment: [String: String],
        clock: TokenGateClock,
        logger: Logger
    ) {
        self.registry = registry
        self.environment = environment
        self.clock = clock
        self.logger = logger
    }

    /// Loads the file at `path` (named in errors as given).
    public func load(path: String) async throws -> LoadedConfiguration {
        let file = ConfigFile(path: path, environment: environment)
        guard let data = FileManager.default.contents(atPath: path) else {
            let reason = FileManager.default.fileExists(atPath: path) ? "cannot read the file" : "no such file"
            throw ConfigError(file: path, mark: nil, keyPath: "", message: reason)
        }
        return try await load(bytes: [UInt8](data), file: file)
    }

    /// Loads configuration text that came from `file`.
    public func load(bytes: [UInt8], file: ConfigFile) async throws -> LoadedConfiguration {
        let configuration = try ConfigurationParser().parse(ConfigNode.parse(bytes, file: file))
        var providers: [ProviderID: Provider] = [:]
        for (id, settings) in configuration.providers.sorted(by: { $0.key < $1.key }) {
            providers[id] = Provider(settings: settings, backend: try await makeBackend(settings))
        }
        return LoadedConfiguration(configuration: configuration, providers: providers)
    }

    private func makeBackend(_ settings: ProviderSettings) async throws -> any TokenBackend {
        guard let factory = registry.factory(for: settings.backendType) else {
            let typeNode = try settings.backendSection.entries().first { $0.key == "type" }?.node
            throw (typeNode ?? settings.backendSection).error(
                "unknown backend type '\(settings.backendType)'; this build has: \(registry.types.joined(separator: ", "))"
            )
        }
        var logger = logger
        logger[metadataKey: "provider"] = "\(settings.id)"
        let context = BackendContext(
            provider: settings.id,
            section: settings.backendSection,
            audience: settings.audience,
            clock: clock,
            logger: logger
        )
        return try await factory.makeBackend(context)
    }
}
